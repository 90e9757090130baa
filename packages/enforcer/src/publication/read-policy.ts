/**
 * The reading side of the policy protocol (names in `keys.ts`), for enforcers: the head, the
 * deltas of the log, a whole snapshot read in pages, and the announcements. Nothing read here is
 * trusted: the head's fields are parsed, each delta and entry is validated where it is applied
 * (`PolicyState`), and a snapshot must add up to the head's checksum.
 */
import { z } from "zod";
import { parseEntryText } from "../policy/entries";
import type { PolicyFieldError } from "../policy/errors";
import { PolicyState, type PolicyStateOptions } from "../policy/policy-state";
import { policyRedisNames } from "./keys";

/** The commands the readers send; ioredis's client satisfies it. */
export interface PolicyReadingRedis {
  hgetall(key: string): Promise<Record<string, string>>;
  hget(key: string, field: string): Promise<string | null>;
  hmget(key: string, ...fields: string[]): Promise<(string | null)[]>;
  hscan(
    key: string,
    cursor: string,
    countToken: "COUNT",
    count: number,
  ): Promise<[string, string[]]>;
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
  format: z.literal("2", { error: "format must be 2" }),
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
  | { readonly status: "ok"; readonly head: PolicyHead };

/** The head, parsed; `none` when nothing was published in this format under `prefix`. */
export async function readPolicyHead(
  redis: Pick<PolicyReadingRedis, "hgetall">,
  prefix: string,
): Promise<PolicyHeadRead> {
  const fields = await redis.hgetall(policyRedisNames(prefix).head);
  if (Object.keys(fields).length === 0) return { status: "none" };
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

/**
 * Reads the head's snapshot in pages (HSCAN: Redis is never blocked by one large reply) and builds
 * the policy it holds at `head.snapshotVersion`, validated entry by entry and checked against the
 * head's snapshot checksum. A snapshot replaced while it is read stays for minutes
 * (`REPLACED_SNAPSHOT_LINGER_MS`), so a read in progress completes.
 */
export async function loadPolicySnapshot(
  redis: Pick<PolicyReadingRedis, "hscan">,
  prefix: string,
  head: PolicyHead,
  options: PolicyStateOptions = {},
): Promise<SnapshotLoad> {
  const key = policyRedisNames(prefix).snapshot(head.snapshotVersion);
  // Built as the pages arrive: only the state is held, never the whole reply or a second copy.
  const builder = PolicyState.builder(head.snapshotVersion, options);
  const errors: PolicyFieldError[] = [];
  let cursor = "0";
  do {
    const [next, flat] = await redis.hscan(key, cursor, "COUNT", 1_000);
    cursor = next;
    for (let index = 0; index + 1 < flat.length; index += 2) {
      const parsed = parseEntryText(flat[index] as string, flat[index + 1] as string);
      // HSCAN may return an entry twice; the set holds it once (`add` ignores the second).
      if (parsed.ok) builder.add(parsed.value);
      else if (errors.length < 20) errors.push(...parsed.errors);
    }
  } while (cursor !== "0");
  if (errors.length > 0) return { status: "invalid", errors };
  if (builder.count !== head.snapshotEntries) {
    return {
      status: "invalid",
      errors: [
        {
          path: ["snapshot"],
          message: `snapshot ${head.snapshotVersion} holds ${builder.count} entries, not the ${head.snapshotEntries} its head says`,
        },
      ],
    };
  }
  const built = builder.finish(head.snapshotChecksum);
  return built.ok
    ? { status: "ok", state: built.value }
    : { status: "invalid", errors: built.errors };
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
