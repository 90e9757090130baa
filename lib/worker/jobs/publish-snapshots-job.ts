import { OUTBOX_NOTIFY_CHANNEL } from "@/lib/control/outbox/outbox";
import {
  type DrainOutcome,
  publishPendingSnapshots,
  type SnapshotPublisher,
} from "@/lib/control/outbox/publish-pending-snapshots";
import {
  publishPendingToRegion,
  type RegionPublisher,
} from "@/lib/control/outbox/publish-to-region";
import {
  type RepublishOutcome,
  republishLatestIfBehind,
} from "@/lib/control/outbox/republish-latest";
import type { WorkerJob } from "../worker-job";

/** A Redis client that says when it has (re)connected; ioredis's client is one. */
export interface ReconnectingRedis {
  on(event: "ready", listener: () => void): unknown;
  off(event: "ready", listener: () => void): unknown;
}

export interface PublishSnapshotsJobOptions {
  /**
   * The installation's one Redis, or one region's (REGIONS: one job per region, each with its
   * own progress, so a region that is down holds no other back).
   */
  readonly publisher: (SnapshotPublisher | RegionPublisher) & {
    readonly redis: ReconnectingRedis & SnapshotPublisher["redis"];
  };
  /** The safety-net poll when nothing wakes the job. @default 5000 */
  readonly pollMs?: number;
  /** Told of every drain, for logs and tests. */
  readonly onDrain?: (outcome: DrainOutcome) => void;
  /**
   * Told when Redis had lost the policy and the latest version was published again, or when the
   * log was compacted into a new snapshot.
   */
  readonly onRepublish?: (outcome: RepublishOutcome) => void;
}

/**
 * The guaranteed path of publication: drains the outbox to Redis in order. Runs when a change
 * commits (NOTIFY), when the Redis client reconnects ("ready"), at each backoff deadline while
 * Redis is down, and every `pollMs` regardless. With nothing pending, it repairs a Redis that lost
 * the policy and compacts a long delta log into a new snapshot (`republish-latest.ts`).
 */
export function publishSnapshotsJob(options: PublishSnapshotsJobOptions): WorkerJob {
  const pollMs = options.pollMs ?? 5_000;
  const nowMs = () => options.publisher.clock.nowMs();
  const publisher = options.publisher;
  const drain = (): Promise<DrainOutcome> =>
    "region" in publisher
      ? publishPendingToRegion(publisher, "wait")
      : publishPendingSnapshots(publisher, "wait");
  return {
    name: "region" in publisher ? `publish snapshots to ${publisher.region}` : "publish snapshots",
    wakeOn: [OUTBOX_NOTIFY_CHANNEL],
    attach(wake) {
      const redis = options.publisher.redis;
      redis.on("ready", wake);
      return () => redis.off("ready", wake);
    },
    async run() {
      const outcome = await drain();
      options.onDrain?.(outcome);
      switch (outcome.status) {
        case "published":
          return { nextRunInMs: outcome.hasMore ? 0 : pollMs };
        case "failed":
        case "backoff":
          return { nextRunInMs: Math.min(pollMs, Math.max(0, outcome.retryAtMs - nowMs())) };
        case "idle": {
          const repaired = await republishLatestIfBehind(options.publisher);
          if (repaired.status !== "current") options.onRepublish?.(repaired);
          return { nextRunInMs: pollMs };
        }
        case "busy":
        case "unavailable":
          return { nextRunInMs: pollMs };
        default: {
          const unknown: never = outcome;
          throw new Error(`unknown drain outcome ${JSON.stringify(unknown)}`);
        }
      }
    },
  };
}
