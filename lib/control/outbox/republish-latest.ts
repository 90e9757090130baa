/**
 * The worker's upkeep of what Redis holds, when the outbox has nothing pending:
 *
 * - **Repair.** Redis here keeps nothing on disk, so a restart (or a failover to an empty
 *   replica) leaves no policy while the outbox holds nothing pending, and a newly started
 *   enforcer would find nothing to apply. When Redis's head is missing or behind the latest
 *   stored version, the latest is published again as a whole snapshot; the swap only ever moves
 *   the head forward, so this is harmless when it races a normal publication.
 * - **Compaction.** Enforcers that start or fall behind load the head's snapshot and then every
 *   delta logged after it. When the log has grown past `compactAfterDeltas`, a new snapshot of
 *   the latest version is written in the background and the log is trimmed; enforcers that are
 *   running notice nothing.
 */
import { readPolicyHead } from "@limitplane/enforcer/publication";
import { publishWholePolicy, type SnapshotPublisher } from "./publish-pending-snapshots";

export type RepublishOutcome =
  | { readonly status: "current"; readonly version: number | null }
  | { readonly status: "republished"; readonly version: number; readonly redisHad: number | null }
  | { readonly status: "compacted"; readonly version: number; readonly deltasBefore: number };

/** Deltas after the snapshot before the worker writes a new snapshot. */
export const COMPACT_AFTER_DELTAS = 500;

export async function republishLatestIfBehind(
  publisher: SnapshotPublisher,
  options: { readonly compactAfterDeltas?: number } = {},
): Promise<RepublishOutcome> {
  const latest = await publisher.db.policyVersion.findFirst({
    orderBy: { version: "desc" },
    select: { version: true },
  });
  if (latest === null) return { status: "current", version: null };
  const read = await readPolicyHead(publisher.redis, publisher.prefix);
  const redisHad = read.status === "ok" ? read.head.version : null;
  if (redisHad === null || redisHad < latest.version) {
    const whole = await publishWholePolicy(publisher, "publish");
    return whole.applied
      ? { status: "republished", version: whole.version, redisHad }
      : { status: "current", version: redisHad };
  }
  if (read.status !== "ok") return { status: "current", version: redisHad };
  const deltas = read.head.version - read.head.snapshotVersion;
  if (deltas >= (options.compactAfterDeltas ?? COMPACT_AFTER_DELTAS)) {
    const whole = await publishWholePolicy(publisher, "compact");
    if (whole.applied) {
      return { status: "compacted", version: whole.version, deltasBefore: deltas };
    }
  }
  return { status: "current", version: redisHad };
}
