/**
 * What an enforcer writes to Redis besides limiter state, for the console (key layout in
 * `redis-keys.ts`):
 *
 * - {@link StatusReporter}: a heartbeat hash per enforcer (the version it runs, when it applied
 *   it, refused snapshots, breaker state) with a TTL, and a sorted set of enforcer ids by last
 *   heartbeat, so the console lists every live enforcer and its lag.
 * - {@link MetricsFlusher}: the per-scope counters and the latency histogram, drained from
 *   `DecisionMetrics` as deltas and added (HINCRBY) into expiring per-second and per-minute hashes,
 *   and the customers' recent rejections into capped, expiring lists.
 *
 * Both write in one MULTI per tick on the `control` client, and skip the tick while that client is
 * not connected: the metrics stay buffered in process (bounded by `DecisionMetrics`'
 * `maxPendingBuckets` and `RecentRejections`' `maxPending`) and go out when Redis is back.
 */
import { hostname } from "node:os";
import type { Redis } from "ioredis";
import type { Clock } from "../limiter/clock";
import {
  type EnforcerRedisNames,
  NON_SCOPE_FIELD_PREFIX,
  SCOPE_COUNT_FIELDS,
  scopeField,
} from "../publication/redis-keys";
import type { CircuitBreaker } from "./circuit-breaker";
import { describeError, type EnforcerLogger } from "./logger";
import type { DecisionMetrics, MetricsBucket, RecentRejections } from "./metrics";
import type { AppliedSnapshot, SnapshotErrorReport } from "./policy-follower";
import type { TimerHandle, Timers } from "./timers";

/** The commands the reporters use; an ioredis client. */
export type ReportingRedis = Pick<Redis, "status" | "multi">;

/** Runs `tick` every `intervalMs` after the previous run finished, until cancelled. */
export function runEvery(
  timers: Timers,
  intervalMs: number,
  tick: () => Promise<void>,
): TimerHandle {
  let handle: TimerHandle | null = null;
  let isCancelled = false;
  const schedule = () => {
    if (isCancelled) return;
    handle = timers.setTimer(() => {
      void tick()
        .catch(() => undefined)
        .finally(schedule);
    }, intervalMs);
  };
  schedule();
  return {
    cancel: () => {
      isCancelled = true;
      handle?.cancel();
    },
  };
}

/** What the heartbeat reports; read at every beat. */
export interface EnforcerReport {
  readonly applied: AppliedSnapshot | null;
  readonly snapshotErrors: SnapshotErrorReport;
  readonly breaker: CircuitBreaker;
}

export interface StatusReporterOptions {
  readonly redis: ReportingRedis;
  readonly names: EnforcerRedisNames;
  readonly enforcerId: string;
  readonly report: () => EnforcerReport;
  /** How long a heartbeat hash lives without a newer beat. */
  readonly ttlMs: number;
  readonly wallClock: Clock;
  readonly logger: EnforcerLogger;
}

/** How long an enforcer id stays in the `enforcers` set after its last heartbeat. */
const ENFORCER_SET_RETENTION_MS = 3_600_000;

export class StatusReporter {
  readonly #options: StatusReporterOptions;
  readonly #startedAtMs: number;
  #isFailing = false;

  constructor(options: StatusReporterOptions) {
    this.#options = options;
    this.#startedAtMs = options.wallClock.nowMs();
  }

  /** Writes the heartbeat now. Never throws; skipped while the client is not connected. */
  async beat(): Promise<void> {
    const { redis, names, enforcerId, ttlMs, wallClock } = this.#options;
    if (redis.status !== "ready") return;
    const nowMs = wallClock.nowMs();
    const { applied, snapshotErrors, breaker } = this.#options.report();
    const breakerState = breaker.snapshot();
    const key = names.enforcer(enforcerId);
    const fields: Record<string, string> = {
      id: enforcerId,
      host: hostname(),
      pid: String(process.pid),
      startedAt: String(this.#startedAtMs),
      heartbeatAt: String(nowMs),
      version: applied === null ? "" : String(applied.version),
      checksum: applied?.checksum ?? "",
      appliedAt: applied === null ? "" : String(applied.appliedAtMs),
      publishedAt: applied?.publishedAtMs == null ? "" : String(applied.publishedAtMs),
      appliedVia: applied?.trigger ?? "",
      snapshotErrors: String(snapshotErrors.count),
      lastSnapshotError: snapshotErrors.lastMessage ?? "",
      lastSnapshotErrorVersion:
        snapshotErrors.lastVersion === null ? "" : String(snapshotErrors.lastVersion),
      lastSnapshotErrorAt: snapshotErrors.lastAtMs === null ? "" : String(snapshotErrors.lastAtMs),
      breakerState: breakerState.state,
      breakerOpenCount: String(breakerState.openCount),
    };
    try {
      await redis
        .multi()
        .hset(key, fields)
        .pexpire(key, ttlMs)
        .zadd(names.enforcers, nowMs, enforcerId)
        .zremrangebyscore(names.enforcers, "-inf", nowMs - ENFORCER_SET_RETENTION_MS)
        .exec();
      this.#isFailing = false;
    } catch (error: unknown) {
      if (!this.#isFailing) {
        this.#isFailing = true;
        this.#options.logger.log("warn", "heartbeat failed", { error: describeError(error) });
      }
    }
  }

  /** Removes this enforcer from the console's list (on a clean shutdown). Never throws. */
  async remove(): Promise<void> {
    const { redis, names, enforcerId } = this.#options;
    if (redis.status !== "ready") return;
    try {
      await redis.multi().del(names.enforcer(enforcerId)).zrem(names.enforcers, enforcerId).exec();
    } catch {
      // The hash expires by itself.
    }
  }
}

export interface MetricsFlusherOptions {
  readonly redis: ReportingRedis;
  readonly names: EnforcerRedisNames;
  readonly enforcerId: string;
  readonly metrics: DecisionMetrics;
  readonly recentRejections: RecentRejections;
  readonly secondBucketTtlMs: number;
  readonly minuteBucketTtlMs: number;
  readonly rejectionsPerCustomer: number;
  readonly rejectionsTtlMs: number;
  readonly logger: EnforcerLogger;
}

/** Most customers listed in `rejections:customers`. */
const REJECTED_CUSTOMERS_KEPT = 1_000;

export class MetricsFlusher {
  readonly #options: MetricsFlusherOptions;
  #isFailing = false;
  #lostFlushCount = 0;

  constructor(options: MetricsFlusherOptions) {
    this.#options = options;
  }

  /** Flushes whose MULTI failed after draining: their counts are lost (never double counted). */
  get lostFlushCount(): number {
    return this.#lostFlushCount;
  }

  /**
   * Adds everything counted since the last flush to Redis. Never throws. While the client is not
   * connected nothing is drained, so the counts wait in process; a MULTI that fails once sent is
   * not retried (it may have been applied), and is counted in `lostFlushCount`.
   */
  async flush(): Promise<void> {
    const { redis, names, metrics, recentRejections } = this.#options;
    if (redis.status !== "ready") return;
    const buckets = metrics.drain();
    const rejections = recentRejections.drain();
    if (buckets.length === 0 && rejections.length === 0) return;

    const tx = redis.multi();
    // Per-minute deltas are summed here first: one HINCRBY per field and minute, not per second.
    const minutes = new Map<number, Map<string, number>>();
    for (const bucket of buckets) {
      const fields = bucketFields(bucket);
      const secondKey = names.metricsSecond(Math.floor(bucket.startMs / 1000));
      for (const [field, value] of fields) tx.hincrby(secondKey, field, value);
      tx.pexpire(secondKey, this.#options.secondBucketTtlMs);
      const minute = Math.floor(bucket.startMs / 60_000);
      let sums = minutes.get(minute);
      if (sums === undefined) {
        sums = new Map();
        minutes.set(minute, sums);
      }
      for (const [field, value] of fields) sums.set(field, (sums.get(field) ?? 0) + value);
    }
    for (const [minute, sums] of minutes) {
      const minuteKey = names.metricsMinute(minute);
      for (const [field, value] of sums) tx.hincrby(minuteKey, field, value);
      tx.pexpire(minuteKey, this.#options.minuteBucketTtlMs);
    }

    const byCustomer = new Map<string, string[]>();
    const latestAtMs = new Map<string, number>();
    for (const rejection of rejections) {
      const entry = JSON.stringify({
        atMs: rejection.atMs,
        scope: rejection.scope,
        endpointClass: rejection.endpointClass,
        enforcerId: this.#options.enforcerId,
      });
      const list = byCustomer.get(rejection.customerId);
      if (list === undefined) byCustomer.set(rejection.customerId, [entry]);
      else list.push(entry);
      latestAtMs.set(
        rejection.customerId,
        Math.max(latestAtMs.get(rejection.customerId) ?? 0, rejection.atMs),
      );
    }
    const keep = this.#options.rejectionsPerCustomer;
    for (const [customerId, entries] of byCustomer) {
      const key = names.rejections(customerId);
      // Oldest first, so the newest ends up at the head of the list.
      tx.lpush(key, ...entries.slice(-keep));
      tx.ltrim(key, 0, keep - 1);
      tx.pexpire(key, this.#options.rejectionsTtlMs);
      tx.zadd(names.rejectedCustomers, latestAtMs.get(customerId) ?? 0, customerId);
    }
    if (byCustomer.size > 0) {
      tx.zremrangebyrank(names.rejectedCustomers, 0, -(REJECTED_CUSTOMERS_KEPT + 1));
    }

    try {
      const results = await tx.exec();
      const failed = results?.find(([error]) => error !== null);
      if (failed !== undefined) throw failed[0];
      if (this.#isFailing) {
        this.#isFailing = false;
        this.#options.logger.log("info", "metrics flush recovered");
      }
    } catch (error: unknown) {
      this.#lostFlushCount++;
      if (!this.#isFailing) {
        this.#isFailing = true;
        this.#options.logger.log("warn", "metrics flush failed; those counts are lost", {
          error: describeError(error),
        });
      }
    }
  }
}

/**
 * A bucket as HINCRBY deltas: `<scope>|allowed` ... for every scope, `@latency|le=<µs>` per
 * histogram bucket (not cumulative) plus `@latency|le=+Inf`, `@latency|sumMicros`,
 * `@latency|count`, `@source|<source>` and `@failure|<failure>`. Zero deltas are left out.
 */
export function bucketFields(bucket: MetricsBucket): Map<string, number> {
  const fields = new Map<string, number>();
  const add = (field: string, value: number) => {
    if (value !== 0) fields.set(field, (fields.get(field) ?? 0) + value);
  };
  for (const counts of bucket.scopes) {
    for (const count of SCOPE_COUNT_FIELDS) add(scopeField(counts.scope, count), counts[count]);
  }
  const p = NON_SCOPE_FIELD_PREFIX;
  const { latency } = bucket;
  latency.boundsMicros.forEach((bound, index) => {
    add(`${p}latency|le=${bound}`, latency.counts[index] ?? 0);
  });
  add(`${p}latency|le=+Inf`, latency.counts[latency.boundsMicros.length] ?? 0);
  add(`${p}latency|sumMicros`, Math.round(latency.sumMicros));
  add(`${p}latency|count`, latency.count);
  for (const [source, value] of Object.entries(bucket.decisionsBySource)) {
    add(`${p}source|${source}`, value);
  }
  for (const [failure, value] of Object.entries(bucket.degradedByFailure)) {
    add(`${p}failure|${failure}`, value);
  }
  return fields;
}
