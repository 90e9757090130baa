/**
 * The reading side of the policy protocol (names in `keys.ts`), for enforcers: the head, the
 * deltas of the log, a whole snapshot (one binary value, `binary-snapshot.ts`, read in ranges), and
 * the announcements. Nothing read here is trusted: the head's fields are parsed (its protocol
 * first, `protocol.ts`), each delta is validated where it is applied (`PolicyState`), and a
 * snapshot is checked whole (its digest, every offset) and must be the head's version, checksum
 * and entry count.
 */
import { z } from "zod";
import type { PolicyFieldError } from "../policy/errors";
import { PolicyState, type PolicyStateOptions } from "../policy/policy-state";
import { policyRedisNames } from "./keys";
import { parseProtocolVersion, REDIS_PROTOCOL_VERSION } from "./protocol";

/** The commands the readers send; ioredis's client satisfies it. */
export interface PolicyReadingRedis {
  hgetall(key: string): Promise<Record<string, string>>;
  hget(key: string, field: string): Promise<string | null>;
  hmget(key: string, ...fields: string[]): Promise<(string | null)[]>;
  strlen(key: string): Promise<number>;
  getrangeBuffer(key: string, start: number, end: number): Promise<Uint8Array>;
}

export interface PolicyHead {
  readonly version: number;
  readonly checksum: string;
  readonly entries: number;
  /** Redis's clock when the head last moved, epoch ms. */
  readonly publishedAtMs: number;
  readonly snapshotVersion: number;
  readonly snapshotChecksum: string;
  readonly snapshotEntries: number;
}

const positive = z.string().regex(/^[1-9][0-9]{0,15}$/, { error: "must be a positive integer" });
const count = z.string().regex(/^[0-9]{1,16}$/, { error: "must be a whole number" });
const checksum = z.string().regex(/^[0-9a-f]{64}$/, { error: "must be 64 hex characters" });

const ZHeadFields = z.object({
  format: z.literal(String(REDIS_PROTOCOL_VERSION)),
  version: positive,
  checksum,
  entries: count,
  publishedAt: count,
  snapshotVersion: positive,
  snapshotChecksum: checksum,
  snapshotEntries: count,
});

export type PolicyHeadRead =
  | { readonly status: "none" }
  | { readonly status: "invalid"; readonly errors: readonly PolicyFieldError[] }
  /** The head is of another protocol version (`protocol.ts`); null when it names none. */
  | { readonly status: "protocol"; readonly storedVersion: number | null }
  | { readonly status: "ok"; readonly head: PolicyHead };

/** The head, parsed; `none` when nothing was published in this format under `prefix`. */
export async function readPolicyHead(
  redis: Pick<PolicyReadingRedis, "hgetall">,
  prefix: string,
): Promise<PolicyHeadRead> {
  const fields = await redis.hgetall(policyRedisNames(prefix).head);
  if (Object.keys(fields).length === 0) return { status: "none" };
  const protocol = parseProtocolVersion(fields.format);
  if (protocol !== REDIS_PROTOCOL_VERSION) return { status: "protocol", storedVersion: protocol };
  const parsed = ZHeadFields.safeParse(fields);
  if (!parsed.success) {
    return {
      status: "invalid",
      errors: parsed.error.issues.map((issue) => ({
        path: ["head", ...issue.path.map(String)],
        message: issue.message,
      })),
    };
  }
  const head = parsed.data;
  return {
    status: "ok",
    head: {
      version: Number(head.version),
      checksum: head.checksum,
      entries: Number(head.entries),
      publishedAtMs: Number(head.publishedAt),
      snapshotVersion: Number(head.snapshotVersion),
      snapshotChecksum: head.snapshotChecksum,
      snapshotEntries: Number(head.snapshotEntries),
    },
  };
}

/** The head's version alone (one HGET: what a poll reads); null when there is none. */
export async function readPolicyHeadVersion(
  redis: Pick<PolicyReadingRedis, "hget">,
  prefix: string,
): Promise<string | null> {
  return redis.hget(policyRedisNames(prefix).head, "version");
}

/**
 * The deltas of versions `from` to `to` (inclusive) as their JSON text, in order; null for a
 * version the log does not hold (trimmed, or a version published as a snapshot).
 */
export async function readPolicyDeltas(
  redis: Pick<PolicyReadingRedis, "hmget">,
  prefix: string,
  from: number,
  to: number,
): Promise<(string | null)[]> {
  const names = policyRedisNames(prefix);
  const texts: (string | null)[] = [];
  for (let start = from; start <= to; start += 200) {
    const fields: string[] = [];
    for (let version = start; version <= Math.min(to, start + 199); version++) {
      fields.push(String(version));
    }
    texts.push(...(await redis.hmget(names.deltas, ...fields)));
  }
  return texts;
}

export type SnapshotLoad =
  | { readonly status: "ok"; readonly state: PolicyState }
  | { readonly status: "invalid"; readonly errors: readonly PolicyFieldError[] };

/** Bytes per GETRANGE when a snapshot is read: Redis is never blocked by one large reply. */
export const SNAPSHOT_READ_CHUNK_BYTES = 4 * 1024 * 1024;

/**
 * Reads the head's snapshot (one binary value, in ranges of {@link SNAPSHOT_READ_CHUNK_BYTES}) and
 * opens it as the policy at `head.snapshotVersion`: checked whole, the overrides left as bytes and
 * looked up lazily. A snapshot replaced while it is read stays for minutes
 * (`REPLACED_SNAPSHOT_LINGER_MS`), so a read in progress completes; one that vanished or changed
 * length meanwhile is refused.
 */
export async function loadPolicySnapshot(
  redis: Pick<PolicyReadingRedis, "strlen" | "getrangeBuffer">,
  prefix: string,
  head: PolicyHead,
  options: PolicyStateOptions = {},
): Promise<SnapshotLoad> {
  const key = policyRedisNames(prefix).snapshot(head.snapshotVersion);
  const refuse = (message: string): SnapshotLoad => ({
    status: "invalid",
    errors: [{ path: ["snapshot"], message: `snapshot ${head.snapshotVersion} ${message}` }],
  });
  const length = await redis.strlen(key);
  if (length === 0) return refuse(`is missing from Redis (${key})`);
  const bytes = new Uint8Array(length);
  for (let offset = 0; offset < length; offset += SNAPSHOT_READ_CHUNK_BYTES) {
    const end = Math.min(length, offset + SNAPSHOT_READ_CHUNK_BYTES);
    const chunk = await redis.getrangeBuffer(key, offset, end - 1);
    if (chunk.length !== end - offset) {
      return refuse(`changed length while it was read (${key}): expired or rewritten`);
    }
    bytes.set(chunk, offset);
  }
  const loaded = PolicyState.fromBinary(bytes, options);
  if (!loaded.ok) return { status: "invalid", errors: loaded.errors };
  const state = loaded.value;
  if (
    state.version !== head.snapshotVersion ||
    state.checksum !== head.snapshotChecksum ||
    state.size.entries !== head.snapshotEntries
  ) {
    return refuse(
      `holds version ${state.version} (checksum ${state.checksum}, ${state.size.entries} entries), not the ${head.snapshotVersion} (checksum ${head.snapshotChecksum}, ${head.snapshotEntries} entries) its head says`,
    );
  }
  return { status: "ok", state };
}

/** An announcement of the delta format: which version, and its delta when small enough. */
export interface PolicyAnnouncement {
  readonly version: number;
  readonly base: number;
  readonly checksum: string;
  /** Redis's clock when it was published, epoch ms (absent for a snapshot's announcement). */
  readonly publishedAtMs: number | null;
  /** The delta, unparsed (validated where it is applied); null: read it from the log. */
  readonly delta: unknown;
}

const ZPolicyAnnouncement = z.strictObject({
  version: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
  base: z.number().int().min(0),
  checksum: z.string().regex(/^[0-9a-f]{64}$/),
  publishedAt: z.number().int().nonnegative().optional(),
  delta: z.unknown(),
});

/** Parses a message from the announce channel; null when it is not a delta-format announcement. */
export function parsePolicyAnnouncement(message: string): PolicyAnnouncement | null {
  let value: unknown;
  try {
    value = JSON.parse(message);
  } catch {
    return null;
  }
  const result = ZPolicyAnnouncement.safeParse(value);
  if (!result.success) return null;
  const { publishedAt, ...rest } = result.data;
  return { ...rest, publishedAtMs: publishedAt ?? null, delta: rest.delta ?? null };
}
