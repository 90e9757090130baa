/**
 * The writing side of the policy protocol (names in `keys.ts`): a version goes out either as a
 * delta appended to the log (`publishPolicyDelta`: one script, O(size of the change)), or as a
 * new snapshot of the whole set (`publishPolicySnapshot`: one binary value, `binary-snapshot.ts`,
 * written in chunks under a fresh key, then swapped in by one script), which is also how the log
 * is compacted in the background.
 *
 * Both scripts move the head forward only: a duplicate or a late, older version changes nothing
 * and announces nothing. A delta is refused unless the head is exactly its base (same version and
 * checksum) in this protocol version (`protocol.ts`): the caller then publishes a snapshot instead,
 * so Redis never holds a set that is not the one the control plane computed. A snapshot replaces a
 * head of an older protocol whatever its version; neither script touches a newer protocol's head
 * (they answer 4, thrown as a `RedisProtocolError`).
 */
import { createHash, randomBytes } from "node:crypto";
import { isNoScript } from "../limiter/stores/no-script";
import { policyRedisNames } from "./keys";
import { REDIS_PROTOCOL_VERSION, RedisProtocolError } from "./protocol";

/** The Redis commands publication uses; ioredis's client satisfies it. */
export interface PolicyPublishingRedis {
  evalsha(sha: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
  hgetall(key: string): Promise<Record<string, string>>;
  set(key: string, value: Buffer, expiry: "PX", ms: number): Promise<unknown>;
  append(key: string, value: Buffer): Promise<number>;
  del(...keys: string[]): Promise<number>;
}

/**
 * KEYS: head, deltas. ARGV: version, base, baseChecksum, checksum, entries, delta JSON, channel,
 * "1" to carry the delta in the announcement (else it says null), the protocol version. The
 * announcement is built here, so it carries `publishedAt` from Redis's clock. Returns
 * {1, version} applied, {0, stored} already there or newer, {2, stored} the head is not the
 * delta's base or of an older protocol (publish a snapshot), {4, protocol} a newer protocol's.
 */
export const PUBLISH_DELTA_SCRIPT = `
local head = redis.call('HMGET', KEYS[1], 'version', 'checksum', 'format')
local protocol = tonumber(ARGV[9])
if head[1] and head[3] ~= ARGV[9] then
  local storedProtocol = tonumber(head[3] or '')
  if storedProtocol == nil or storedProtocol > protocol then
    return {4, storedProtocol or -1}
  end
  return {2, 0}
end
local stored = tonumber(head[1] or '0') or 0
local version = tonumber(ARGV[1])
if version == nil or version <= stored then
  return {0, stored}
end
if head[1] == false or stored ~= tonumber(ARGV[2]) or head[2] ~= ARGV[3] then
  return {2, stored}
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[6])
local now = redis.call('TIME')
local publishedAtMs = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('HSET', KEYS[1], 'version', ARGV[1], 'checksum', ARGV[4], 'entries', ARGV[5],
  'publishedAt', string.format('%d', publishedAtMs))
local body = 'null'
if ARGV[8] == '1' then body = ARGV[6] end
redis.call('PUBLISH', ARGV[7], '{"version":' .. ARGV[1] .. ',"base":' .. ARGV[2] ..
  ',"checksum":"' .. ARGV[4] .. '","publishedAt":' .. string.format('%d', publishedAtMs) ..
  ',"delta":' .. body .. '}')
return {1, version}
`;

/**
 * KEYS: head, the complete build, the new snapshot key, the current snapshot key (as the caller
 * read it from the head), deltas. ARGV: version, checksum, entries, mode (`publish`: the snapshot
 * is a new version; `compact`: it is an existing version, the log after it stays), the snapshot
 * version the caller read, how long the replaced snapshot lingers (ms) for readers still
 * reading it, how many versions of deltas to keep below the snapshot, channel, announcement,
 * the protocol version. Returns {1, version} swapped in, {0, stored} not newer, {3, stored} the
 * head moved meanwhile, {4, protocol} the head is a newer protocol's (nothing changed).
 */
export const SWAP_SNAPSHOT_SCRIPT = `
local head = redis.call('HMGET', KEYS[1], 'version', 'snapshotVersion', 'format')
local stored = tonumber(head[1] or '0') or 0
local snapshotVersion = tonumber(head[2] or '0') or 0
local version = tonumber(ARGV[1])
if head[1] and head[3] ~= ARGV[10] then
  local storedProtocol = tonumber(head[3] or '')
  if storedProtocol == nil or storedProtocol > tonumber(ARGV[10]) then
    redis.call('DEL', KEYS[2])
    return {4, storedProtocol or -1}
  end
  -- An older protocol's head: replaced whole, whatever its version.
  stored = 0
end
if snapshotVersion ~= tonumber(ARGV[5]) then
  redis.call('DEL', KEYS[2])
  return {3, stored}
end
local isPublish = ARGV[4] == 'publish'
if (isPublish and version <= stored) or ((not isPublish) and (version <= snapshotVersion or version > stored)) then
  redis.call('DEL', KEYS[2])
  return {0, stored}
end
redis.call('RENAME', KEYS[2], KEYS[3])
redis.call('PERSIST', KEYS[3])
if snapshotVersion > 0 and KEYS[4] ~= KEYS[3] then
  redis.call('PEXPIRE', KEYS[4], tonumber(ARGV[6]))
end
redis.call('HSET', KEYS[1], 'format', ARGV[10], 'snapshotVersion', ARGV[1], 'snapshotChecksum', ARGV[2],
  'snapshotEntries', ARGV[3])
if isPublish then
  local now = redis.call('TIME')
  local publishedAtMs = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
  redis.call('HSET', KEYS[1], 'version', ARGV[1], 'checksum', ARGV[2], 'entries', ARGV[3],
    'publishedAt', string.format('%d', publishedAtMs))
  redis.call('DEL', KEYS[5])
  redis.call('PUBLISH', ARGV[8], ARGV[9])
else
  local floor = version - tonumber(ARGV[7])
  for _, field in ipairs(redis.call('HKEYS', KEYS[5])) do
    if tonumber(field) <= floor then redis.call('HDEL', KEYS[5], field) end
  end
end
return {1, version}
`;

const sha1 = (script: string) => createHash("sha1").update(script).digest("hex");
export const PUBLISH_DELTA_SHA = sha1(PUBLISH_DELTA_SCRIPT);
export const SWAP_SNAPSHOT_SHA = sha1(SWAP_SNAPSHOT_SCRIPT);

async function runScript(
  redis: PolicyPublishingRedis,
  script: string,
  sha: string,
  keys: readonly string[],
  args: readonly string[],
): Promise<readonly [number, number]> {
  let reply: unknown;
  try {
    reply = await redis.evalsha(sha, keys.length, ...keys, ...args);
  } catch (error: unknown) {
    // A restarted Redis has an empty script cache; EVAL loads the script again.
    if (!isNoScript(error)) throw error;
    reply = await redis.eval(script, keys.length, ...keys, ...args);
  }
  if (!Array.isArray(reply) || reply.length !== 2) {
    throw new Error(`unexpected reply from a publication script: ${JSON.stringify(reply)}`);
  }
  return [Number(reply[0]), Number(reply[1])];
}

function protocolError(stored: number, prefix: string): RedisProtocolError {
  return new RedisProtocolError({
    storedVersion: stored < 0 ? null : stored,
    keyPrefix: prefix,
    reader: "control plane",
  });
}

/** The announcement of a version published as a snapshot (a delta's is built by its script). */
function snapshotAnnouncement(version: number, checksum: string): string {
  return `{"version":${version},"base":${version - 1},"checksum":"${checksum}","delta":null}`;
}

/** Deltas larger than this are announced without their body: enforcers read them from the log. */
export const MAX_INLINE_DELTA_BYTES = 64 * 1024;

export interface DeltaToPublish {
  readonly version: number;
  readonly checksum: string;
  readonly baseChecksum: string;
  /** Entries in the set at `version`. */
  readonly entries: number;
  /** The delta as JSON text, exactly as enforcers will parse it (`ZPolicyDelta`). */
  readonly deltaJson: string;
}

export type DeltaPublishResult =
  | { readonly status: "applied"; readonly version: number; readonly bytes: number }
  /** Redis already has this version or a newer one. */
  | { readonly status: "duplicate"; readonly currentVersion: number }
  /** Redis's head is not this delta's base: publish a snapshot instead. */
  | { readonly status: "needs-snapshot"; readonly currentVersion: number };

/** Appends `delta` to the log, moves the head and announces it, in one script. */
export async function publishPolicyDelta(
  redis: PolicyPublishingRedis,
  prefix: string,
  delta: DeltaToPublish,
): Promise<DeltaPublishResult> {
  const names = policyRedisNames(prefix);
  const isInline = Buffer.byteLength(delta.deltaJson) <= MAX_INLINE_DELTA_BYTES;
  const args = [
    String(delta.version),
    String(delta.version - 1),
    delta.baseChecksum,
    delta.checksum,
    String(delta.entries),
    delta.deltaJson,
    names.announce,
    isInline ? "1" : "0",
    String(REDIS_PROTOCOL_VERSION),
  ];
  const [status, version] = await runScript(
    redis,
    PUBLISH_DELTA_SCRIPT,
    PUBLISH_DELTA_SHA,
    [names.head, names.deltas],
    args,
  );
  if (status === 1) {
    // What this change put on the wire to Redis: the script's arguments (the announcement repeats
    // the delta when inline).
    const bytes =
      args.reduce((sum, arg) => sum + Buffer.byteLength(arg), 0) +
      (isInline ? Buffer.byteLength(delta.deltaJson) : 0);
    return { status: "applied", version, bytes };
  }
  if (status === 2) return { status: "needs-snapshot", currentVersion: version };
  if (status === 4) throw protocolError(version, prefix);
  return { status: "duplicate", currentVersion: version };
}

export interface SnapshotToPublish {
  readonly version: number;
  readonly checksum: string;
  readonly entries: number;
  /** `publish`: a new version; `compact`: a version already in the log, to shorten it. */
  readonly mode: "publish" | "compact";
  /** The whole set as a binary snapshot (`BinarySnapshotWriter`, `PolicyState.toBinary`). */
  readonly bytes: Uint8Array;
}

export type SnapshotPublishResult =
  | { readonly status: "applied"; readonly version: number; readonly bytes: number }
  | { readonly status: "not-newer"; readonly currentVersion: number }
  /** The head moved while the snapshot was written (another publisher); nothing changed. */
  | { readonly status: "raced"; readonly currentVersion: number };

/** How long a replaced snapshot stays for enforcers still reading it. */
export const REPLACED_SNAPSHOT_LINGER_MS = 5 * 60_000;
/** Deltas kept below a compacted snapshot, for enforcers slightly behind it. */
export const DELTAS_KEPT_BELOW_SNAPSHOT = 100;

/** Bytes per command when a snapshot is written: Redis is never blocked by one huge command. */
export const SNAPSHOT_WRITE_CHUNK_BYTES = 1024 * 1024;

/**
 * Writes the binary snapshot under a fresh key (a SET, then APPENDs of
 * {@link SNAPSHOT_WRITE_CHUNK_BYTES}, so Redis keeps serving decisions), then swaps it in as
 * `snapshot:<version>` with one script.
 */
export async function publishPolicySnapshot(
  redis: PolicyPublishingRedis,
  prefix: string,
  snapshot: SnapshotToPublish,
): Promise<SnapshotPublishResult> {
  const names = policyRedisNames(prefix);
  const head = await redis.hgetall(names.head);
  const readSnapshotVersion = Number(head.snapshotVersion ?? "0") || 0;
  const build = names.build(`${snapshot.version}-${randomBytes(6).toString("hex")}`);
  const bytes = snapshot.bytes.length;
  const chunk = (offset: number) =>
    Buffer.from(
      snapshot.bytes.buffer,
      snapshot.bytes.byteOffset + offset,
      Math.min(SNAPSHOT_WRITE_CHUNK_BYTES, bytes - offset),
    );
  try {
    // An abandoned build (a crash halfway) disappears by itself.
    await redis.set(build, chunk(0), "PX", 3_600_000);
    for (
      let offset = SNAPSHOT_WRITE_CHUNK_BYTES;
      offset < bytes;
      offset += SNAPSHOT_WRITE_CHUNK_BYTES
    ) {
      await redis.append(build, chunk(offset));
    }
    const announcement = snapshotAnnouncement(snapshot.version, snapshot.checksum);
    const [status, version] = await runScript(
      redis,
      SWAP_SNAPSHOT_SCRIPT,
      SWAP_SNAPSHOT_SHA,
      [
        names.head,
        build,
        names.snapshot(snapshot.version),
        names.snapshot(readSnapshotVersion),
        names.deltas,
      ],
      [
        String(snapshot.version),
        snapshot.checksum,
        String(snapshot.entries),
        snapshot.mode,
        String(readSnapshotVersion),
        String(REPLACED_SNAPSHOT_LINGER_MS),
        String(DELTAS_KEPT_BELOW_SNAPSHOT),
        names.announce,
        announcement,
        String(REDIS_PROTOCOL_VERSION),
      ],
    );
    if (status === 1) return { status: "applied", version, bytes };
    if (status === 3) return { status: "raced", currentVersion: version };
    if (status === 4) throw protocolError(version, prefix);
    return { status: "not-newer", currentVersion: version };
  } catch (error: unknown) {
    await redis.del(build).catch(() => undefined);
    throw error;
  }
}
