/**
 * The compiled policy in Postgres: `PolicyEntry` holds the entry set at the latest version
 * (@limitplane/enforcer/policy `entries.ts`), `PolicyVersion` one row per version with the set's
 * checksum and the delta that made it. A change compares the entries it could have changed with
 * the stored ones (by key, through the primary key and the `kind` / `customerId` indexes), and
 * records only the difference: the set's checksum moves by the digests that left and came, so no
 * change ever reads the whole set.
 *
 * Every statement binds a fixed number of parameters (arrays through `unnest`, or a chunk of JSON
 * rows through `json_to_recordset`), however many entries it writes: Postgres and Prisma allow at
 * most 32,767 per statement.
 */
import {
  CORE_KINDS_OF_ENTRIES,
  EMPTY_SET_CHECKSUM,
  type EntryKind,
  EntrySetSum,
  MAX_DELTA_CHANGES,
  POLICY_DELTA_FORMAT,
  type PolicyEntry,
} from "@limitplane/enforcer/policy";
import type { Prisma } from "@/lib/generated/prisma/client";
import { enqueueOutboxEvent, POLICY_SNAPSHOT_TOPIC } from "../outbox/outbox";
import { type EntryRow, toEntryRow } from "./entry-row";
import type { PreparedEntries } from "./prepare-import";

type Tx = Prisma.TransactionClient;

/** The kinds a core change can touch: the few entries every request's resolution shares. */
export const CORE_KINDS: readonly EntryKind[] = CORE_KINDS_OF_ENTRIES;

/** Rows per statement when writing entries. */
const WRITE_CHUNK = 5_000;

/** One entry a version changes: set (`next`), or removed (`next` null). */
export interface EntryChange {
  readonly key: string;
  /** The digest it had; null when it is new. */
  readonly previousDigest: string | null;
  readonly next: EntryRow | null;
}

/** Where the entries a change may touch live: every kind listed, and every customer listed. */
export interface EntryKeySpace {
  readonly kinds: readonly EntryKind[];
  readonly customerIds: readonly string[];
}

/**
 * The changes that turn the stored entries of `space` into `next` (which must hold all of the
 * space's entries as they should be), plus the removal of incidents that expired by `nowMs`
 * (wherever they are: each change cleans them up, so the set never carries them for long).
 */
export async function diffEntries(
  tx: Tx,
  next: readonly PolicyEntry[],
  space: EntryKeySpace,
  nowMs: number,
): Promise<EntryChange[]> {
  const stored = await tx.policyEntry.findMany({
    where: {
      OR: [
        ...(space.kinds.length === 0 ? [] : [{ kind: { in: [...space.kinds] } }]),
        ...(space.customerIds.length === 0 ? [] : [{ customerId: { in: [...space.customerIds] } }]),
        { expiresAt: { lte: new Date(nowMs) } },
      ],
    },
    select: { key: true, digest: true },
  });
  const storedDigest = new Map(stored.map((row) => [row.key, row.digest]));
  const changes: EntryChange[] = [];
  const kept = new Set<string>();
  for (const entry of next) {
    const row = toEntryRow(entry);
    kept.add(row.key);
    const previous = storedDigest.get(row.key) ?? null;
    if (previous !== row.digest)
      changes.push({ key: row.key, previousDigest: previous, next: row });
  }
  for (const [key, digest] of storedDigest) {
    if (!kept.has(key)) changes.push({ key, previousDigest: digest, next: null });
  }
  return changes;
}

/** The latest version's row, or null before the first. */
export async function latestVersion(tx: Tx) {
  return tx.policyVersion.findFirst({
    orderBy: { version: "desc" },
    select: { version: true, checksum: true, entries: true },
  });
}

/** A version about to be written (`planVersion`, then `writeVersion`). */
export interface PlannedVersion {
  readonly version: number;
  readonly baseChecksum: string;
  readonly checksum: string;
  readonly entries: number;
  readonly changes: readonly EntryChange[];
  /** The delta as enforcers receive it; null when the version goes out as a whole snapshot. */
  readonly delta: string | null;
  readonly compiledAt: string;
  /**
   * The whole new set is in the staging table (`stageEntries`): the version's entries are
   * written from it, and `changes` lists them only when few enough for a delta.
   */
  readonly isStaged?: boolean;
}

/**
 * Version latest + 1 for `changes` (not empty): its checksum (the base's, minus the digests that
 * leave, plus the ones that come), its entry count and its delta (when at most
 * MAX_DELTA_CHANGES). Runs under the policy-change lock, so versions are consecutive and each
 * delta's base is the version before it.
 */
export async function planVersion(
  tx: Tx,
  changes: readonly EntryChange[],
  nowMs: number,
): Promise<PlannedVersion> {
  return deltaOf(await nextVersion(tx), changes, nowMs);
}

/** The latest version, which every version planned builds on. */
async function nextVersion(tx: Tx) {
  const latest = await latestVersion(tx);
  if (latest !== null && latest.entries === null) {
    throw new Error(`policy version ${latest.version} has no entry count, which no release writes`);
  }
  return latest;
}

function deltaOf(
  latest: Awaited<ReturnType<typeof latestVersion>>,
  changes: readonly EntryChange[],
  nowMs: number,
): PlannedVersion {
  const version = (latest?.version ?? 0) + 1;
  const baseChecksum = latest?.checksum ?? EMPTY_SET_CHECKSUM;
  const sum = new EntrySetSum(baseChecksum);
  let entries = latest?.entries ?? 0;
  for (const change of changes) {
    if (change.previousDigest !== null) {
      sum.remove(change.previousDigest);
      entries--;
    }
    if (change.next !== null) {
      sum.add(change.next.digest);
      entries++;
    }
  }
  const checksum = sum.hex;
  const compiledAt = new Date(nowMs).toISOString();
  let delta: string | null = null;
  if (changes.length <= MAX_DELTA_CHANGES) {
    // Built as text from the stored canonical values, so what is published is what was hashed.
    const body = changes
      .map(
        (change) =>
          `{"key":${JSON.stringify(change.key)},"value":${change.next === null ? "null" : change.next.value}}`,
      )
      .join(",");
    delta = `{"format":${POLICY_DELTA_FORMAT},"version":${version},"base":${version - 1},"compiledAt":"${compiledAt}","baseChecksum":"${baseChecksum}","checksum":"${checksum}","changes":[${body}]}`;
  }
  return { version, baseChecksum, checksum, entries, changes, delta, compiledAt };
}

/** Writes a planned version: its entries, its row and an outbox row for the publisher. */
export async function writeVersion(
  tx: Tx,
  planned: PlannedVersion,
  auditEntryId: bigint | null,
  options: { readonly wholeSetBytes?: number } = {},
): Promise<void> {
  if (planned.isStaged === true) await writeStagedEntries(tx, planned.version);
  else await writeEntryChanges(tx, planned.version, planned.changes);
  await tx.policyVersion.create({
    data: {
      version: planned.version,
      checksum: planned.checksum,
      baseChecksum: planned.baseChecksum,
      entries: planned.entries,
      changes: planned.changes.length,
      delta: planned.delta,
      deltaBytes:
        planned.delta === null ? (options.wholeSetBytes ?? null) : Buffer.byteLength(planned.delta),
      auditEntryId,
    },
    select: { version: true },
  });
  await enqueueOutboxEvent(tx, POLICY_SNAPSHOT_TOPIC, { version: planned.version });
}

/** Upserts and deletes in bounded statements (a fixed number of parameters each). */
async function writeEntryChanges(
  tx: Tx,
  version: number,
  changes: readonly EntryChange[],
): Promise<void> {
  const upserts = changes.flatMap((change) => (change.next === null ? [] : [change.next]));
  const deletes = changes.flatMap((change) => (change.next === null ? [change.key] : []));
  for (let start = 0; start < deletes.length; start += WRITE_CHUNK) {
    const keys = deletes.slice(start, start + WRITE_CHUNK);
    await tx.$executeRaw`DELETE FROM "PolicyEntry" WHERE "key" = ANY(${keys}::text[])`;
  }
  for (let start = 0; start < upserts.length; start += WRITE_CHUNK) {
    const rows = upserts.slice(start, start + WRITE_CHUNK);
    await tx.$executeRaw`
      INSERT INTO "PolicyEntry" ("key", "kind", "customerId", "value", "digest", "expiresAt", "version")
      SELECT k, kind, c, v, d, e, ${version}::int
      FROM unnest(
        ${rows.map((row) => row.key)}::text[],
        ${rows.map((row) => row.kind)}::text[],
        ${rows.map((row) => row.customerId)}::text[],
        ${rows.map((row) => row.value)}::text[],
        ${rows.map((row) => row.digest)}::text[],
        ${rows.map((row) => row.expiresAt)}::timestamptz[]
      ) AS t(k, kind, c, v, d, e)
      ON CONFLICT ("key") DO UPDATE
        SET "kind" = EXCLUDED."kind", "customerId" = EXCLUDED."customerId",
            "value" = EXCLUDED."value", "digest" = EXCLUDED."digest",
            "expiresAt" = EXCLUDED."expiresAt", "version" = EXCLUDED."version"`;
  }
}

// ---------------------------------------------------------------------------------------------
// A whole new set at once (an import): staged in a temporary table, compared in SQL.

export interface StagedSet {
  /** Entries staged. */
  readonly count: number;
  /** The staged set's checksum. */
  readonly checksum: string;
  /** Bytes of the staged entries' keys and values. */
  readonly bytes: number;
}

/**
 * Stages a whole entry set, prepared as chunks of JSON rows (`prepareImport`), in a temporary
 * table (dropped at commit), a chunk a statement, for `planStagedVersion`: a million entries are
 * compared with the stored set in SQL, never loaded side by side in memory.
 */
export async function stageEntries(
  tx: Tx,
  entries: PreparedEntries,
  onProgress?: (staged: number) => void,
): Promise<StagedSet> {
  await tx.$executeRaw`
    CREATE TEMPORARY TABLE IF NOT EXISTS "staged_policy_entry" (
      "key" text PRIMARY KEY, "kind" text NOT NULL, "customerId" text, "value" text NOT NULL,
      "digest" text NOT NULL, "expiresAt" timestamptz(3)
    ) ON COMMIT DROP`;
  let staged = 0;
  for (const chunk of entries.chunks) {
    staged += await tx.$executeRaw`
      INSERT INTO "staged_policy_entry" ("key", "kind", "customerId", "value", "digest", "expiresAt")
      SELECT "key", "kind", "customerId", "value", "digest", "expiresAt"
      FROM json_to_recordset(${chunk}::json) AS t(
        "key" text, "kind" text, "customerId" text, "value" text, "digest" text, "expiresAt" timestamptz
      )`;
    onProgress?.(staged);
  }
  if (staged !== entries.count) {
    throw new Error(`staged ${staged} entries of a prepared set of ${entries.count}`);
  }
  await tx.$executeRaw`ANALYZE "staged_policy_entry"`;
  return { count: entries.count, checksum: entries.checksum, bytes: entries.bytes };
}

/**
 * The version that makes the staged set current, or null when it equals the stored one. The
 * changes are counted in SQL; they are read (for the delta) only when few enough for one.
 */
export async function planStagedVersion(
  tx: Tx,
  staged: StagedSet,
  nowMs: number,
): Promise<PlannedVersion | null> {
  const [counted] = await tx.$queryRaw<{ changed: bigint; removed: bigint }[]>`
    SELECT
      (SELECT count(*) FROM "staged_policy_entry" s LEFT JOIN "PolicyEntry" p ON p."key" = s."key"
        WHERE p."key" IS NULL OR p."digest" <> s."digest") AS changed,
      (SELECT count(*) FROM "PolicyEntry" p LEFT JOIN "staged_policy_entry" s ON s."key" = p."key"
        WHERE s."key" IS NULL) AS removed`;
  const total = Number(counted?.changed ?? 0) + Number(counted?.removed ?? 0);
  if (total === 0) return null;
  const latest = await nextVersion(tx);
  if (total > MAX_DELTA_CHANGES) {
    return {
      version: (latest?.version ?? 0) + 1,
      baseChecksum: latest?.checksum ?? EMPTY_SET_CHECKSUM,
      checksum: staged.checksum,
      entries: staged.count,
      changes: [],
      delta: null,
      compiledAt: new Date(nowMs).toISOString(),
      isStaged: true,
    };
  }
  const changed = await tx.$queryRaw<(EntryRow & { previousDigest: string | null })[]>`
    SELECT s."key", s."kind", s."customerId", s."value", s."digest", s."expiresAt", p."digest" AS "previousDigest"
    FROM "staged_policy_entry" s LEFT JOIN "PolicyEntry" p ON p."key" = s."key"
    WHERE p."key" IS NULL OR p."digest" <> s."digest"
    ORDER BY s."key"`;
  const removed = await tx.$queryRaw<{ key: string; digest: string }[]>`
    SELECT p."key", p."digest" FROM "PolicyEntry" p LEFT JOIN "staged_policy_entry" s ON s."key" = p."key"
    WHERE s."key" IS NULL ORDER BY p."key"`;
  const changes: EntryChange[] = [
    ...changed.map(({ previousDigest, ...row }) => ({ key: row.key, previousDigest, next: row })),
    ...removed.map((row) => ({ key: row.key, previousDigest: row.digest, next: null })),
  ];
  const planned = deltaOf(latest, changes, nowMs);
  if (planned.checksum !== staged.checksum) {
    throw new Error(
      `the staged set's checksum ${staged.checksum} differs from the stored set's plus its changes (${planned.checksum}): the stored entries are damaged`,
    );
  }
  return { ...planned, isStaged: true };
}

async function writeStagedEntries(tx: Tx, version: number): Promise<void> {
  await tx.$executeRaw`
    DELETE FROM "PolicyEntry" p WHERE NOT EXISTS (
      SELECT 1 FROM "staged_policy_entry" s WHERE s."key" = p."key")`;
  await tx.$executeRaw`
    INSERT INTO "PolicyEntry" ("key", "kind", "customerId", "value", "digest", "expiresAt", "version")
    SELECT "key", "kind", "customerId", "value", "digest", "expiresAt", ${version}::int
    FROM "staged_policy_entry"
    ON CONFLICT ("key") DO UPDATE
      SET "kind" = EXCLUDED."kind", "customerId" = EXCLUDED."customerId",
          "value" = EXCLUDED."value", "digest" = EXCLUDED."digest",
          "expiresAt" = EXCLUDED."expiresAt", "version" = EXCLUDED."version"
      WHERE "PolicyEntry"."digest" <> EXCLUDED."digest"`;
}
