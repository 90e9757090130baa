/**
 * Drains the policy outbox topic to Redis, oldest first. Each pending row names a version:
 *
 * - a version with a delta goes out as that delta (`publishPolicyDelta`: one script, the bytes of
 *   the change), which Redis accepts only onto its base version and checksum;
 * - a version too large for a delta, or one Redis cannot take as a delta (its head is not the
 *   base: Redis lost the policy, or this is the first publication), goes out as a whole snapshot
 *   of the latest version (`publishWholePolicy`), which covers every pending version up to it.
 *
 * Two callers use it:
 *
 * - a service, right after its change commits (`isVersionPublished`), so enforcers hear within
 *   milliseconds; it waits (bounded) for a drain in progress, then says whether the version is in
 *   Redis, whoever published it;
 * - the worker (`mode: "wait"`), the guaranteed path: it waits its turn, and after a failure
 *   retries with exponential backoff (capped) until Redis returns, then catches up in order.
 *
 * Publishers take a transaction-scoped advisory lock, so versions go out one drain at a time, in
 * order. A crash after Redis applied a version but before the row was marked leaves the row
 * pending; the next drain publishes it again, which the script refuses harmlessly.
 */

import { createHash } from "node:crypto";
import type { Clock } from "@limitplane/enforcer/limiter";
import { BinarySnapshotWriter, EntrySetSum, parseEntryText } from "@limitplane/enforcer/policy";
import {
  type PolicyPublishingRedis,
  policyRedisNames,
  publishPolicyDelta,
  publishPolicySnapshot,
} from "@limitplane/enforcer/publication";
import { Prisma, type PrismaClient } from "@/lib/generated/prisma/client";
import { lockOutboxPublisher } from "../locks";
import { POLICY_SNAPSHOT_TOPIC, ZPolicySnapshotPayload } from "./outbox";

/** Exponential backoff between attempts while Redis is unreachable. */
export interface BackoffOptions {
  /** Delay after the first failure. @default 250 */
  readonly initialMs?: number;
  /** Cap on the delay. @default 10_000 */
  readonly maxMs?: number;
}

/** The Redis commands a publisher sends; ioredis's client satisfies it. */
export interface PublisherRedis extends PolicyPublishingRedis {
  hget(key: string, field: string): Promise<string | null>;
  /** The connection state (`ready` when connected); absent: assume connected. */
  readonly status?: string;
}

/** Everything a drain needs. */
export interface SnapshotPublisher {
  readonly db: PrismaClient;
  /** A `control` client from lib/server/redis.ts; `status` tells whether it is connected. */
  readonly redis: PublisherRedis;
  /** REDIS_KEY_PREFIX. */
  readonly prefix: string;
  readonly backoff?: BackoffOptions;
  /** Rows per drain; the worker drains again at once while more remain. @default 100 */
  readonly batchSize?: number;
  /** The wall clock. */
  readonly clock: Clock;
}

export interface PublishedVersion {
  readonly version: number;
  /** False when Redis already had this or a newer version (a duplicate). */
  readonly applied: boolean;
  /** `delta`: its own delta; `snapshot`: inside a whole snapshot of a version at or after it. */
  readonly via: "delta" | "snapshot";
  /** Bytes sent to Redis for it (a snapshot's bytes are counted on the version it was of). */
  readonly bytes: number;
}

export type DrainOutcome =
  /** Nothing was pending. */
  | { readonly status: "idle" }
  | {
      readonly status: "published";
      readonly versions: readonly PublishedVersion[];
      /** More rows remain beyond this batch. */
      readonly hasMore: boolean;
    }
  /** `try` only: another publisher holds the lock (it, or the worker, publishes these rows). */
  | { readonly status: "busy" }
  /** `try` only: Redis is not connected; the worker will publish. */
  | { readonly status: "unavailable" }
  /** The head row is waiting for its backoff to pass; nothing was attempted. */
  | { readonly status: "backoff"; readonly retryAtMs: number }
  /** Publishing failed; `versions` went out before the failure. Retry at `retryAtMs`. */
  | {
      readonly status: "failed";
      readonly versions: readonly PublishedVersion[];
      readonly error: string;
      readonly retryAtMs: number;
    };

export function backoffDelayMs(attempts: number, options: BackoffOptions = {}): number {
  const initialMs = options.initialMs ?? 250;
  const maxMs = options.maxMs ?? 10_000;
  return Math.min(maxMs, initialMs * 2 ** Math.min(Math.max(attempts - 1, 0), 30));
}

/**
 * What a failed drain reports and stores in `lastError`: the whole message (a driver's useful
 * line is often its last), capped at 500 characters; the enforcer's log fields keep only the
 * first line, which would lose it.
 */
export function lastErrorText(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.length > 500 ? `${message.slice(0, 500)}…` : message;
}

function isConnected(publisher: SnapshotPublisher): boolean {
  return publisher.redis.status === undefined || publisher.redis.status === "ready";
}

/**
 * Publishes pending versions in order. `try` never waits and never throws (a failure is
 * returned); `wait` waits for the publisher lock and throws only when Postgres fails.
 */
export async function publishPendingSnapshots(
  publisher: SnapshotPublisher,
  mode: "wait" | "try",
  options: { readonly lockTimeoutMs?: number } = {},
): Promise<DrainOutcome> {
  const connected = isConnected(publisher);
  if (mode === "try" && !connected) return { status: "unavailable" };
  const drain = async (): Promise<DrainOutcome> => {
    const outcome = await drainOnce(publisher, mode, connected, options.lockTimeoutMs);
    return outcome.status === "needs-whole" ? publishWholeAndMark(publisher, outcome) : outcome;
  };
  if (mode === "wait") return drain();
  try {
    return await drain();
  } catch (error: unknown) {
    return {
      status: "failed",
      versions: [],
      error: lastErrorText(error),
      retryAtMs: publisher.clock.nowMs(),
    };
  }
}

/**
 * After a change commits: publishes its version if no one else is, waits (at most
 * `waitMs`) for a drain in progress to finish, and says whether Redis now holds `version` or a
 * later one, whoever published it. Never throws.
 */
export async function isVersionPublished(
  publisher: SnapshotPublisher,
  version: number,
  waitMs = 2_000,
): Promise<boolean> {
  if (!isConnected(publisher)) return false;
  try {
    const first = await publishPendingSnapshots(publisher, "try");
    if (first.status === "busy") {
      // Another drain (the worker's, another request's) holds the lock: wait for it to end, then
      // drain what it left (it may have started before this version committed).
      await publishPendingSnapshots(publisher, "wait", { lockTimeoutMs: waitMs });
    }
    return (await publishedHeadVersion(publisher)) >= version;
  } catch {
    try {
      return (await publishedHeadVersion(publisher)) >= version;
    } catch {
      return false;
    }
  }
}

/** The version Redis's head holds (0: none). */
export async function publishedHeadVersion(
  publisher: Pick<SnapshotPublisher, "redis" | "prefix">,
): Promise<number> {
  const raw = await publisher.redis.hget(policyRedisNames(publisher.prefix).head, "version");
  const version = Number(raw ?? "0");
  return Number.isSafeInteger(version) ? version : 0;
}

/** A drain that stopped at a version needing a whole snapshot (published after its transaction). */
interface NeedsWhole {
  readonly status: "needs-whole";
  /** Published before it. */
  readonly versions: readonly PublishedVersion[];
  readonly headRowId: bigint;
  readonly attempts: number;
}

async function drainOnce(
  publisher: SnapshotPublisher,
  mode: "wait" | "try",
  connected: boolean,
  lockTimeoutMs: number | undefined,
): Promise<DrainOutcome | NeedsWhole> {
  const nowMs = () => publisher.clock.nowMs();
  const batchSize = publisher.batchSize ?? 100;
  return publisher.db.$transaction(
    async (tx): Promise<DrainOutcome | NeedsWhole> => {
      if (lockTimeoutMs !== undefined) {
        await tx.$executeRawUnsafe(
          `SET LOCAL lock_timeout = ${Math.max(1, Math.round(lockTimeoutMs))}`,
        );
      }
      if (!(await lockOutboxPublisher(tx, mode))) return { status: "busy" };
      const rows = await tx.outboxEvent.findMany({
        where: { topic: POLICY_SNAPSHOT_TOPIC, publishedAt: null },
        orderBy: { id: "asc" },
        take: batchSize + 1,
        select: { id: true, payload: true, attempts: true, nextAttemptAt: true },
      });
      const head = rows[0];
      if (head === undefined) return { status: "idle" };
      // While Redis is down, only the backoff schedule retries; once the client reconnects, a
      // wake-up (a new change, the client's "ready") retries at once.
      if (mode === "wait" && !connected && head.nextAttemptAt.getTime() > nowMs()) {
        return { status: "backoff", retryAtMs: head.nextAttemptAt.getTime() };
      }
      const versions: PublishedVersion[] = [];
      const batch = rows.slice(0, batchSize);
      for (const row of batch) {
        const { version } = ZPolicySnapshotPayload.parse(row.payload);
        try {
          const stored = await tx.policyVersion.findUnique({
            where: { version },
            select: { checksum: true, baseChecksum: true, entries: true, delta: true },
          });
          if (stored === null) throw new Error(`policy version ${version} does not exist`);
          if (stored.delta !== null && stored.baseChecksum !== null && stored.entries !== null) {
            const result = await publishPolicyDelta(publisher.redis, publisher.prefix, {
              version,
              checksum: stored.checksum,
              baseChecksum: stored.baseChecksum,
              entries: stored.entries,
              deltaJson: stored.delta,
            });
            if (result.status !== "needs-snapshot") {
              versions.push({
                version,
                applied: result.status === "applied",
                via: "delta",
                bytes: result.status === "applied" ? result.bytes : 0,
              });
              await markPublished(tx, [row.id], nowMs());
              continue;
            }
          }
          // No delta to send, or Redis cannot take it: the latest version as a whole snapshot,
          // which covers this row and every later one up to it. Written after this transaction
          // ends: it reads the entries in a repeatable-read transaction of its own, and the
          // embedded Postgres serves one connection at a time.
          return { status: "needs-whole", versions, headRowId: row.id, attempts: row.attempts };
        } catch (error: unknown) {
          // Later rows wait: publishing them first would skip this version.
          const retryAtMs = nowMs() + backoffDelayMs(row.attempts + 1, publisher.backoff);
          const message = lastErrorText(error);
          await tx.outboxEvent.update({
            where: { id: row.id },
            data: {
              attempts: { increment: 1 },
              lastError: message,
              nextAttemptAt: new Date(retryAtMs),
            },
            select: { id: true },
          });
          return { status: "failed", versions, error: message, retryAtMs };
        }
      }
      return { status: "published", versions, hasMore: rows.length > batchSize };
    },
    // Redis commands are bounded by the client's command timeout (1 s for `control`); a whole
    // snapshot of a million entries is written in batches well inside this.
    { maxWait: 10_000, timeout: 600_000 },
  );
}

async function markPublished(
  tx: Prisma.TransactionClient,
  ids: readonly bigint[],
  nowMs: number,
): Promise<void> {
  if (ids.length === 0) return;
  await tx.outboxEvent.updateMany({
    where: { id: { in: [...ids] } },
    data: { publishedAt: new Date(nowMs), attempts: { increment: 1 }, lastError: null },
  });
}

/**
 * Publishes the latest version whole and marks every pending row up to it published; on failure,
 * records the attempt on the row that needed it (backoff) and reports it. Runs without the
 * publisher lock: the swap only moves the head forward, and a delta goes out only onto its exact
 * base, so a drain running meanwhile cannot make Redis hold anything the control plane did not.
 */
async function publishWholeAndMark(
  publisher: SnapshotPublisher,
  pending: NeedsWhole,
): Promise<DrainOutcome> {
  const nowMs = () => publisher.clock.nowMs();
  try {
    const whole = await publishWholePolicy(publisher, "publish");
    const covered = await publisher.db.$queryRaw<{ version: number }[]>`
      UPDATE "OutboxEvent"
      SET "publishedAt" = ${new Date(nowMs())}, "attempts" = "attempts" + 1, "lastError" = NULL
      WHERE "topic" = ${POLICY_SNAPSHOT_TOPIC} AND "publishedAt" IS NULL
        AND ("payload"->>'version')::int <= ${whole.version}
      RETURNING ("payload"->>'version')::int AS "version"`;
    const versions = [
      ...pending.versions,
      ...covered
        .map((row) => row.version)
        .sort((a, b) => a - b)
        .map(
          (version): PublishedVersion => ({
            version,
            applied: whole.applied,
            via: "snapshot",
            bytes: version === whole.version ? whole.bytes : 0,
          }),
        ),
    ];
    const more = await publisher.db.outboxEvent.count({
      where: { topic: POLICY_SNAPSHOT_TOPIC, publishedAt: null },
    });
    return { status: "published", versions, hasMore: more > 0 };
  } catch (error: unknown) {
    const retryAtMs = nowMs() + backoffDelayMs(pending.attempts + 1, publisher.backoff);
    const message = lastErrorText(error);
    await publisher.db.outboxEvent.update({
      where: { id: pending.headRowId },
      data: { attempts: { increment: 1 }, lastError: message, nextAttemptAt: new Date(retryAtMs) },
      select: { id: true },
    });
    return { status: "failed", versions: pending.versions, error: message, retryAtMs };
  }
}

/** Node's SHA-256 of a snapshot's bytes: the same digest as the portable one, faster. */
const nodeSha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest();

/** Entries per page when a whole snapshot is read from Postgres and written to Redis. */
const SNAPSHOT_PAGE = 1_000;

export interface WholePublication {
  readonly version: number;
  /** False when Redis already had it (or newer, or the head moved meanwhile). */
  readonly applied: boolean;
  readonly bytes: number;
}

/**
 * Publishes the latest version as a whole snapshot, read from Postgres in pages inside one
 * repeatable-read transaction (one consistent version however long it takes), encoded as one
 * binary value (`BinarySnapshotWriter`: a few numbers per override, never the entries) and
 * written to Redis in chunks. `publish` makes it the head; `compact` makes it the snapshot the log
 * starts from (the head stays). The entries' digests must add up to the version's checksum.
 */
export async function publishWholePolicy(
  publisher: SnapshotPublisher,
  mode: "publish" | "compact",
): Promise<WholePublication> {
  return publisher.db.$transaction(
    async (tx) => {
      const latest = await tx.policyVersion.findFirst({
        orderBy: { version: "desc" },
        select: { version: true, checksum: true, entries: true },
      });
      if (latest === null || latest.entries === null) {
        throw new Error("there is no policy version to publish");
      }
      const sum = new EntrySetSum();
      const writer = new BinarySnapshotWriter();
      let count = 0;
      let after = "";
      for (;;) {
        const rows = await tx.policyEntry.findMany({
          where: { key: { gt: after } },
          orderBy: { key: "asc" },
          take: SNAPSHOT_PAGE,
          select: { key: true, value: true, digest: true },
        });
        if (rows.length === 0) break;
        for (const row of rows) {
          const parsed = parseEntryText(row.key, row.value);
          if (!parsed.ok) {
            throw new Error(
              `the stored entry "${row.key}" of version ${latest.version} is not valid: ${parsed.errors[0]?.message}`,
            );
          }
          writer.add(parsed.value);
          sum.add(row.digest);
        }
        count += rows.length;
        after = rows.at(-1)?.key ?? after;
      }
      if (count !== latest.entries || sum.hex !== latest.checksum) {
        throw new Error(
          `the stored entries of version ${latest.version} add up to ${count} entries and checksum ${sum.hex}, not ${latest.entries} and ${latest.checksum}`,
        );
      }
      const result = await publishPolicySnapshot(publisher.redis, publisher.prefix, {
        version: latest.version,
        checksum: latest.checksum,
        entries: latest.entries,
        mode,
        bytes: writer.finish(latest.version, latest.checksum, nodeSha256),
      });
      return {
        version: latest.version,
        applied: result.status === "applied",
        bytes: result.status === "applied" ? result.bytes : 0,
      };
    },
    { isolationLevel: Prisma.TransactionIsolationLevel.RepeatableRead, timeout: 600_000 },
  );
}
