/**
 * Publication to one region's Redis (REGIONS, docs/regions.md). Every region gets every version,
 * in order, on its own schedule: each region's progress is one `RegionPublication` row (the latest
 * version its Redis holds), each region's drain takes a lock of its own, so a region whose Redis
 * is down retries with backoff while the others go on, and catches up in version order (or with
 * one whole snapshot of the latest version, when Redis cannot take the next delta) when it
 * returns. The outbox row of a version is marked published once every region holds it.
 *
 * The versions themselves come from `PolicyVersion`, so a region added later, or one that was
 * down for a week, needs nothing queued for it: it starts from what its row says.
 */
import { publishPolicyDelta } from "@limitplane/enforcer/publication";
import type { Prisma } from "@/lib/generated/prisma/client";
import { lockRegionPublisher } from "../locks";
import { POLICY_SNAPSHOT_TOPIC } from "./outbox";
import {
  backoffDelayMs,
  type DrainOutcome,
  lastErrorText,
  type PublishedVersion,
  publishWholePolicy,
  type SnapshotPublisher,
} from "./publish-pending-snapshots";

/** A publisher for one region: its name, its Redis, and every region of the installation. */
export interface RegionPublisher extends SnapshotPublisher {
  /** The region this publisher serves (a REGIONS name). */
  readonly region: string;
  /** Every configured region, to know when a version is everywhere. */
  readonly allRegions: readonly string[];
}

function isConnected(publisher: RegionPublisher): boolean {
  return publisher.redis.status === undefined || publisher.redis.status === "ready";
}

/**
 * Publishes the versions this region lacks, in order. `try` never waits and never throws;
 * `wait` waits for the region's lock and throws only when Postgres fails.
 */
export async function publishPendingToRegion(
  publisher: RegionPublisher,
  mode: "wait" | "try",
): Promise<DrainOutcome> {
  const connected = isConnected(publisher);
  if (mode === "try" && !connected) return { status: "unavailable" };
  const drain = async (): Promise<DrainOutcome> => {
    const outcome = await drainRegionOnce(publisher, mode, connected);
    if (outcome.status !== "needs-whole") return outcome;
    return publishWholeToRegion(publisher, outcome.versions);
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

interface NeedsWhole {
  readonly status: "needs-whole";
  readonly versions: readonly PublishedVersion[];
}

async function drainRegionOnce(
  publisher: RegionPublisher,
  mode: "wait" | "try",
  connected: boolean,
): Promise<DrainOutcome | NeedsWhole> {
  const nowMs = () => publisher.clock.nowMs();
  const batchSize = publisher.batchSize ?? 100;
  return publisher.db.$transaction(
    async (tx): Promise<DrainOutcome | NeedsWhole> => {
      if (!(await lockRegionPublisher(tx, publisher.region, mode))) return { status: "busy" };
      const progress = await readProgress(tx, publisher.region);
      const rows = await tx.policyVersion.findMany({
        where: { version: { gt: progress.publishedVersion } },
        orderBy: { version: "asc" },
        take: batchSize + 1,
        select: { version: true, checksum: true, baseChecksum: true, entries: true, delta: true },
      });
      if (rows.length === 0) return { status: "idle" };
      if (mode === "wait" && !connected && progress.nextAttemptAt.getTime() > nowMs()) {
        return { status: "backoff", retryAtMs: progress.nextAttemptAt.getTime() };
      }
      const versions: PublishedVersion[] = [];
      try {
        for (const row of rows.slice(0, batchSize)) {
          if (row.delta === null || row.baseChecksum === null || row.entries === null) {
            await recordProgress(tx, publisher, versions);
            return { status: "needs-whole", versions };
          }
          const result = await publishPolicyDelta(publisher.redis, publisher.prefix, {
            version: row.version,
            checksum: row.checksum,
            baseChecksum: row.baseChecksum,
            entries: row.entries,
            deltaJson: row.delta,
          });
          if (result.status === "needs-snapshot") {
            await recordProgress(tx, publisher, versions);
            return { status: "needs-whole", versions };
          }
          versions.push({
            version: row.version,
            applied: result.status === "applied",
            via: "delta",
            bytes: result.status === "applied" ? result.bytes : 0,
          });
        }
      } catch (error: unknown) {
        // What went out before the failure stays recorded; the rest waits, in order.
        await recordProgress(tx, publisher, versions);
        const failure = await recordFailure(tx, publisher, progress.attempts, error);
        return { status: "failed", versions, ...failure };
      }
      await recordProgress(tx, publisher, versions);
      return { status: "published", versions, hasMore: rows.length > batchSize };
    },
    { maxWait: 10_000, timeout: 600_000 },
  );
}

/**
 * The latest version as a whole snapshot, then the region's row moved to it. Outside the drain's
 * transaction, as in `publishPendingSnapshots`: the snapshot reads in a transaction of its own.
 */
async function publishWholeToRegion(
  publisher: RegionPublisher,
  before: readonly PublishedVersion[],
): Promise<DrainOutcome> {
  try {
    const whole = await publishWholePolicy(publisher, "publish");
    const more = await publisher.db.$transaction(async (tx) => {
      const progress = await readProgress(tx, publisher.region);
      const covered = await tx.policyVersion.findMany({
        where: { version: { gt: progress.publishedVersion, lte: whole.version } },
        orderBy: { version: "asc" },
        select: { version: true },
      });
      const versions = covered.map(
        ({ version }): PublishedVersion => ({
          version,
          applied: whole.applied,
          via: "snapshot",
          bytes: version === whole.version ? whole.bytes : 0,
        }),
      );
      await recordProgress(tx, publisher, versions);
      const remaining = await tx.policyVersion.count({ where: { version: { gt: whole.version } } });
      return { versions, remaining };
    });
    return {
      status: "published",
      versions: [...before, ...more.versions],
      hasMore: more.remaining > 0,
    };
  } catch (error: unknown) {
    const failure = await publisher.db.$transaction(async (tx) => {
      const progress = await readProgress(tx, publisher.region);
      return recordFailure(tx, publisher, progress.attempts, error);
    });
    return { status: "failed", versions: before, ...failure };
  }
}

interface Progress {
  readonly publishedVersion: number;
  readonly attempts: number;
  readonly nextAttemptAt: Date;
}

async function readProgress(tx: Prisma.TransactionClient, region: string): Promise<Progress> {
  const select = { publishedVersion: true, attempts: true, nextAttemptAt: true } as const;
  const row = await tx.regionPublication.upsert({
    where: { region },
    create: { region },
    update: {},
    select,
  });
  return row;
}

/** Moves the region's row to the last version published, and the outbox rows every region has. */
async function recordProgress(
  tx: Prisma.TransactionClient,
  publisher: RegionPublisher,
  versions: readonly PublishedVersion[],
): Promise<void> {
  const last = versions.at(-1);
  if (last === undefined) return;
  const now = new Date(publisher.clock.nowMs());
  await tx.regionPublication.updateMany({
    where: { region: publisher.region, publishedVersion: { lt: last.version } },
    data: {
      publishedVersion: last.version,
      publishedAt: now,
      attempts: 0,
      lastError: null,
      nextAttemptAt: now,
    },
  });
  await tx.$executeRaw`
    UPDATE "OutboxEvent" SET "publishedAt" = ${now}, "attempts" = "attempts" + 1, "lastError" = NULL
    WHERE "topic" = ${POLICY_SNAPSHOT_TOPIC} AND "publishedAt" IS NULL
      AND ("payload"->>'version')::int <= (
        SELECT CASE WHEN count(*) = ${publisher.allRegions.length} THEN min("publishedVersion") ELSE 0 END
        FROM "RegionPublication" WHERE "region" = ANY(${[...publisher.allRegions]}::text[]))`;
}

async function recordFailure(
  tx: Prisma.TransactionClient,
  publisher: RegionPublisher,
  attempts: number,
  error: unknown,
): Promise<{ readonly error: string; readonly retryAtMs: number }> {
  const retryAtMs = publisher.clock.nowMs() + backoffDelayMs(attempts + 1, publisher.backoff);
  const message = lastErrorText(error);
  await tx.regionPublication.update({
    where: { region: publisher.region },
    data: { attempts: { increment: 1 }, lastError: message, nextAttemptAt: new Date(retryAtMs) },
    select: { region: true },
  });
  return { error: message, retryAtMs };
}
