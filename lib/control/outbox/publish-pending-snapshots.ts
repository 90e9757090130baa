/**
 * Drains the `policy.snapshot` outbox topic to Redis, oldest first: for each unpublished row, the
 * version's snapshot is published through `publishSnapshot` (atomic, newer-only) and the row is
 * marked published. Two callers use it:
 *
 * - a service, right after its change commits (`mode: "try"`), so enforcers hear within
 *   milliseconds. Best effort: it gives up at once if another publisher is draining or Redis is not
 *   connected, and never throws.
 * - the worker (`mode: "wait"`), the guaranteed path: it waits its turn, and after a failure
 *   retries with exponential backoff (capped) until Redis returns, then catches up in order.
 *
 * Publishers take a transaction-scoped advisory lock, so versions go out one drain at a time, in
 * id order (the order versions were created: they are created under the policy-change lock). A
 * crash after Redis applied a version but before the row was marked leaves the row pending; the
 * next drain publishes it again, which the script refuses harmlessly.
 */

import { parseSnapshot } from "@limitplane/enforcer/policy";
import { type PublishingRedis, publishSnapshot } from "@limitplane/enforcer/publication";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { lockOutboxPublisher } from "../locks";
import { POLICY_SNAPSHOT_TOPIC, ZPolicySnapshotPayload } from "./outbox";

/** Exponential backoff between attempts while Redis is unreachable. */
export interface BackoffOptions {
  /** Delay after the first failure. @default 250 */
  readonly initialMs?: number;
  /** Cap on the delay. @default 10_000 */
  readonly maxMs?: number;
}

/** Everything a drain needs. */
export interface SnapshotPublisher {
  readonly db: PrismaClient;
  /** A `control` client from lib/server/redis.ts; `status` tells whether it is connected. */
  readonly redis: PublishingRedis & { readonly status?: string };
  /** REDIS_KEY_PREFIX. */
  readonly prefix: string;
  readonly backoff?: BackoffOptions;
  /** Rows per drain; the worker drains again at once while more remain. @default 100 */
  readonly batchSize?: number;
  /** Wall clock, ms. @default Date.now */
  readonly nowMs?: () => number;
}

export interface PublishedVersion {
  readonly version: number;
  /** False when Redis already had this or a newer version (a duplicate). */
  readonly applied: boolean;
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

function describeError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.length > 500 ? `${message.slice(0, 500)}…` : message;
}

/**
 * Publishes pending versions in order. `try` never waits and never throws (a failure is
 * returned); `wait` waits for the publisher lock and throws only when Postgres fails.
 */
export async function publishPendingSnapshots(
  publisher: SnapshotPublisher,
  mode: "wait" | "try",
): Promise<DrainOutcome> {
  const isConnected = publisher.redis.status === undefined || publisher.redis.status === "ready";
  if (mode === "try" && !isConnected) return { status: "unavailable" };
  const drain = () => drainOnce(publisher, mode, isConnected);
  if (mode === "wait") return drain();
  try {
    return await drain();
  } catch (error: unknown) {
    return { status: "failed", versions: [], error: describeError(error), retryAtMs: Date.now() };
  }
}

async function drainOnce(
  publisher: SnapshotPublisher,
  mode: "wait" | "try",
  isConnected: boolean,
): Promise<DrainOutcome> {
  const nowMs = publisher.nowMs ?? Date.now;
  const batchSize = publisher.batchSize ?? 100;
  return publisher.db.$transaction(
    async (tx): Promise<DrainOutcome> => {
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
      if (mode === "wait" && !isConnected && head.nextAttemptAt.getTime() > nowMs()) {
        return { status: "backoff", retryAtMs: head.nextAttemptAt.getTime() };
      }
      const versions: PublishedVersion[] = [];
      for (const row of rows.slice(0, batchSize)) {
        const { version } = ZPolicySnapshotPayload.parse(row.payload);
        try {
          const stored = await tx.policyVersion.findUnique({
            where: { version },
            select: { snapshot: true },
          });
          if (stored === null) throw new Error(`policy version ${version} does not exist`);
          const snapshot = parseSnapshot(stored.snapshot);
          if (!snapshot.ok) {
            throw new Error(
              `policy version ${version} is stored damaged: ${snapshot.errors[0]?.message ?? "invalid"}`,
            );
          }
          const result = await publishSnapshot(publisher.redis, publisher.prefix, {
            version,
            checksum: snapshot.value.checksum,
            snapshotJson: JSON.stringify(snapshot.value),
          });
          versions.push({ version, applied: result.applied });
          await tx.outboxEvent.update({
            where: { id: row.id },
            data: { publishedAt: new Date(nowMs()), attempts: { increment: 1 }, lastError: null },
            select: { id: true },
          });
        } catch (error: unknown) {
          // Later rows wait: publishing them first would make this version unpublishable.
          const retryAtMs = nowMs() + backoffDelayMs(row.attempts + 1, publisher.backoff);
          const message = describeError(error);
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
    // Redis commands are bounded by the client's command timeout (1 s for `control`), so a batch
    // stops well inside this, after its first failure.
    { maxWait: 10_000, timeout: 60_000 },
  );
}
