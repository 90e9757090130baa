/**
 * Redis chores every suite of tests and benchmarks shares: publishing a snapshot the way the
 * control plane does, and removing a run's keys afterwards.
 */
import type { Redis } from "ioredis";
import { PolicyState } from "../policy/policy-state";
import type { TSnapshot } from "../policy/schemas";
import { type PolicyPublishingRedis, publishPolicySnapshot } from "../publication/publish-policy";

/**
 * Makes `snapshot` the head under `prefix` and announces it, as one binary snapshot through the
 * control plane's own newer-only `publishPolicySnapshot`; throws if Redis already had it or a
 * newer one.
 */
export async function publishTestSnapshot(
  redis: PolicyPublishingRedis,
  prefix: string,
  snapshot: TSnapshot,
): Promise<void> {
  const state = PolicyState.fromSnapshot(snapshot);
  const result = await publishPolicySnapshot(redis, prefix, {
    version: state.version,
    checksum: state.checksum,
    entries: state.size.entries,
    mode: "publish",
    bytes: state.toBinary(),
  });
  if (result.status !== "applied") {
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
