/**
 * Redis chores every suite of tests and benchmarks shares: publishing a snapshot the way the
 * control plane does, and removing a run's keys afterwards.
 */
import type { Redis } from "ioredis";
import type { TSnapshot } from "../policy/schemas";
import { type PublishingRedis, publishSnapshot } from "../publication/publish-snapshot";

/**
 * Makes `snapshot` current under `prefix` and announces it, with the control plane's own
 * newer-only `publishSnapshot`; throws if Redis already had it or a newer one.
 */
export async function publishTestSnapshot(
  redis: PublishingRedis,
  prefix: string,
  snapshot: TSnapshot,
): Promise<void> {
  const result = await publishSnapshot(redis, prefix, {
    version: snapshot.version,
    checksum: snapshot.checksum,
    snapshotJson: JSON.stringify(snapshot),
  });
  if (!result.applied) {
    throw new Error(`version ${snapshot.version} refused: Redis has ${result.currentVersion}`);
  }
}

/** Deletes every key under `prefix`: SCAN, so a shared Redis is never blocked, then UNLINK. */
export async function deleteKeysUnder(redis: Redis, prefix: string): Promise<void> {
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
    cursor = next;
    if (keys.length > 0) await redis.unlink(...keys);
  } while (cursor !== "0");
}
