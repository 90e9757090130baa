/**
 * The one-off move of an installation from whole snapshots to entries: versions made before
 * deltas stored their compiled snapshot (`PolicyVersion.snapshot`) and no entries. The first
 * change (or the publisher) after the upgrade finds the latest version without an entry count,
 * turns its snapshot into the entry set (`PolicyEntry`), and records it as the next version, with
 * no delta: it goes out as a whole snapshot, which enforcers load as any resync. Runs under the
 * policy-change lock, so it happens once.
 */
import {
  EMPTY_SET_CHECKSUM,
  entriesOfSnapshotPolicy,
  parseSnapshot,
} from "@limitplane/enforcer/policy";
import type { Prisma } from "@/lib/generated/prisma/client";
import { planVersion, toEntryRow, writeVersion } from "./entry-set";

/** Moves the latest version to entries if it predates them; true when it did. */
export async function upgradeToEntries(tx: Prisma.TransactionClient): Promise<boolean> {
  const head = await tx.policyVersion.findFirst({
    orderBy: { version: "desc" },
    select: { version: true, entries: true },
  });
  if (head === null || head.entries !== null) return false;
  const latest = await tx.policyVersion.findUniqueOrThrow({
    where: { version: head.version },
    select: { version: true, snapshot: true },
  });
  const parsed = parseSnapshot(latest.snapshot);
  if (!parsed.ok) {
    throw new Error(
      `policy version ${latest.version} is stored damaged: ${parsed.errors[0]?.message ?? "invalid"}`,
    );
  }
  await tx.policyEntry.deleteMany({});
  const changes = entriesOfSnapshotPolicy(parsed.value.policy).map((entry) => ({
    key: entry.key,
    previousDigest: null,
    next: toEntryRow(entry),
  }));
  // The version before entries counts as the empty set: the move adds every entry.
  const planned = await planVersion(tx, changes, Date.parse(parsed.value.compiledAt), {
    checksum: EMPTY_SET_CHECKSUM,
    entries: 0,
  });
  await writeVersion(tx, { ...planned, delta: null }, null);
  return true;
}
