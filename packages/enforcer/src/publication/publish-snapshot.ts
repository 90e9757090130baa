/**
 * The writing side of publication: makes a compiled snapshot current in Redis and announces it,
 * through one Lua script that refuses any version not greater than the
 * stored one. Duplicate publication is harmless and Redis never goes back to an older version.
 */
import { createHash } from "node:crypto";
import { isNoScript } from "../limiter/stores/no-script";
import { policyRedisNames } from "./keys";

/**
 * Makes a snapshot current and announces it, only if its version is greater than the stored one,
 * in one atomic step: duplicates and late, older versions change nothing and announce nothing.
 *
 * KEYS[1] the current-snapshot hash; ARGV: version (decimal), checksum, snapshot JSON, the
 * announce channel (a channel is not a key: it has no Cluster slot), and the announcement JSON
 * (built by the caller, so large versions keep every digit). `publishedAt` comes from Redis's
 * clock. Returns {1, version} when applied, {0, storedVersion} when refused.
 *
 * Kept in TypeScript rather than a .lua file so every bundler (Next.js included) ships it.
 */
export const PUBLISH_SNAPSHOT_SCRIPT = `
local stored = tonumber(redis.call('HGET', KEYS[1], 'version') or '0') or 0
local version = tonumber(ARGV[1])
if version == nil or version <= stored then
  return {0, stored}
end
local now = redis.call('TIME')
local publishedAtMs = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('HSET', KEYS[1], 'version', ARGV[1], 'checksum', ARGV[2], 'snapshot', ARGV[3],
  'publishedAt', string.format('%d', publishedAtMs))
redis.call('PUBLISH', ARGV[4], ARGV[5])
return {1, version}
`;

/** What EVALSHA names; EVAL loads the script when a restarted Redis has forgotten it. */
export const PUBLISH_SNAPSHOT_SHA = createHash("sha1")
  .update(PUBLISH_SNAPSHOT_SCRIPT)
  .digest("hex");

/** The Redis commands publication uses; ioredis's client satisfies it. */
export interface PublishingRedis {
  evalsha(sha: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
}

export interface SnapshotToPublish {
  readonly version: number;
  readonly checksum: string;
  /** The snapshot as JSON text, exactly as enforcers will parse it. */
  readonly snapshotJson: string;
}

export interface PublishResult {
  /** Whether this call made the snapshot current (and announced it). */
  readonly applied: boolean;
  /** The version current in Redis after the call. */
  readonly currentVersion: number;
}

export async function publishSnapshot(
  redis: PublishingRedis,
  prefix: string,
  snapshot: SnapshotToPublish,
): Promise<PublishResult> {
  if (!Number.isSafeInteger(snapshot.version) || snapshot.version < 1) {
    throw new RangeError(
      `snapshot version must be a positive safe integer, not ${snapshot.version}`,
    );
  }
  const names = policyRedisNames(prefix);
  const announcement = JSON.stringify({ version: snapshot.version, checksum: snapshot.checksum });
  const args = [
    names.current,
    String(snapshot.version),
    snapshot.checksum,
    snapshot.snapshotJson,
    names.announce,
    announcement,
  ];
  let reply: unknown;
  try {
    reply = await redis.evalsha(PUBLISH_SNAPSHOT_SHA, 1, ...args);
  } catch (error: unknown) {
    // A restarted Redis has an empty script cache; EVAL loads the script again.
    if (!isNoScript(error)) throw error;
    reply = await redis.eval(PUBLISH_SNAPSHOT_SCRIPT, 1, ...args);
  }
  if (!Array.isArray(reply) || reply.length !== 2) {
    throw new Error(`unexpected reply from the publish script: ${JSON.stringify(reply)}`);
  }
  const [applied, currentVersion] = reply;
  return { applied: applied === 1, currentVersion: Number(currentVersion) };
}
