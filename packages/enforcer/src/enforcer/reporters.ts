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
 * Both write on the `control` client and skip the tick while it is not connected: the metrics stay
 * buffered in process (bounded by `DecisionMetrics`' `maxPendingBuckets` and `RecentRejections`'
 * `maxPending`) and go out when Redis is back.
 *
 * Redis Cluster: no command and no transaction spans two slots. Each key's writes go in a MULTI
 * of their own (one key, one slot), all sent at once, except the customers' rejection lists,
 * written by a script call per chunk of keys in one slot; the heartbeat hash and the `enforcers` set
 * are written separately (a reader skips a set member whose hash is missing, and a hash without
 * its set member is listed from the next beat), so nothing needs a shared hash tag and the key
 * names stay what they were.
 */
/// <reference path="../limiter/stores/cluster-key-slot.d.ts" />
import { hostname } from "node:os";
import calculateSlot from "cluster-key-slot";
import type { ChainableCommander } from "ioredis";
import type { Clock } from "../limiter/clock";
import type { TimerHandle, Timers } from "../limiter/timers";
import type { RedisClient } from "../publication/redis-clients";
import {
  type EnforcerRedisNames,
  NON_SCOPE_FIELD_PREFIX,
  SCOPE_COUNT_FIELDS,
  scopeField,
} from "../publication/redis-keys";
import {
  ANONYMOUS_TALLY_ID,
  REJECTION_TALLY_KEPT,
  rejectionTallyKey,
  rejectionTallyMember,
} from "../publication/rejection-tally";
import type { CircuitBreaker } from "./circuit-breaker";
import type { DecisionMetrics, MetricsBucket } from "./decision-metrics";
import type { EventLoopDelay } from "./event-loop-delay";
import { describeError, type EnforcerLogger } from "./logger";
import {
  type AppliedSnapshot,
  describeAppliedPolicy,
  type SnapshotErrorReport,
} from "./policy-follower";
import type { AnonymousRejections, CustomerRejection, RecentRejections } from "./recent-rejections";
import type { RedisTopology } from "./redis-topology";
import type { StoreFailure } from "./types";

/** The commands the reporters use; an ioredis client or Cluster. */
export type ReportingRedis = Pick<RedisClient, "status" | "multi" | "eval">;

/**
 * Rejection lists, several per call: ARGV[1] how many to keep, ARGV[2] the lists' lifetime in
 * ms, then per key (in KEYS order) a count n and n entries, oldest first.
 */
const REJECTION_LISTS_LUA = `
local keep, ttl, a = tonumber(ARGV[1]), tonumber(ARGV[2]), 3
for i = 1, #KEYS do
  local n = tonumber(ARGV[a])
  redis.call("LPUSH", KEYS[i], unpack(ARGV, a + 1, a + n))
  redis.call("LTRIM", KEYS[i], 0, keep - 1)
  redis.call("PEXPIRE", KEYS[i], ttl)
  a = a + 1 + n
end
return #KEYS
`;

/** Customers' lists per script call, and between two turns of the event loop. */
const REJECTION_LISTS_PER_CALL = 50;
const REJECTION_LISTS_PER_TURN = 50;

/**
 * Runs each key's transaction, all at once; resolves with the first error of any (a command of a
 * transaction, or the transaction itself), or null when every one applied.
 */
async function execEach(transactions: readonly ChainableCommander[]): Promise<unknown> {
  const results = await Promise.allSettled(transactions.map((tx) => tx.exec()));
  for (const result of results) {
    if (result.status === "rejected") return result.reason ?? new Error("transaction failed");
    if (result.value === null) return new Error("transaction aborted");
    const failed = result.value.find(([error]) => error !== null);
    if (failed !== undefined) return failed[0];
  }
  return null;
}

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
  /** Every server's breaker as one (`DecisionEngine.breakerSnapshot`). */
  readonly breaker: Pick<CircuitBreaker, "snapshot">;
  /** Decisions made without the store since start, by why (totals, never reset). */
  readonly degradedByFailure: Readonly<Record<StoreFailure, number>>;
  /** Store decisions that were slow and waited for, since start. */
  readonly slowStoreDecisions: number;
  /** This process's event-loop delay over the last interval. */
  readonly eventLoopDelay: EventLoopDelay;
  /** The Redis topology it sees (`redis-topology.ts`); null before the first read. */
  readonly redisTopology?: RedisTopology | null;
  /** Changes of primary it saw since start. */
  readonly redisFailoversSeen?: number;
  /** What requests get while no policy is in force, and how many were decided so since start. */
  readonly withoutPolicy: { readonly action: "admit" | "reject"; readonly decisions: number };
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
    const report = this.#options.report();
    const { applied, snapshotErrors, breaker } = report;
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
      // Decisions made without the store (totals since start): the console shows them and the
      // worker's alert reads the per-minute counts (`@failure|...` in the metrics hashes).
      degradedTimeout: String(report.degradedByFailure.timeout),
      degradedStoreError: String(report.degradedByFailure["store-error"]),
      degradedCircuitOpen: String(report.degradedByFailure["circuit-open"]),
      slowStoreDecisions: String(report.slowStoreDecisions),
      eventLoopDelayP99Ms: String(report.eventLoopDelay.p99Ms),
      eventLoopDelayMaxMs: String(report.eventLoopDelay.maxMs),
      redisMode: report.redisTopology?.mode ?? "",
      redisPrimaries: report.redisTopology?.primaries.join(",") ?? "",
      redisReplicas: report.redisTopology?.replicas.join(",") ?? "",
      redisSentinelName: report.redisTopology?.sentinelName ?? "",
      redisFailoversSeen: String(report.redisFailoversSeen ?? 0),
      // "none" while no snapshot is in force: the console's fleet, /status and the no-policy
      // alert read it. An enforcer keeps its last good snapshot once it has one, so it has run
      // without a policy since it started. "cached" while the policy saved on disk stands in for
      // the live one (`policyCache`), with when it was saved.
      policy: applied === null ? "none" : applied.via === "cache" ? "cached" : "applied",
      policyCachedAt: applied?.savedAtMs == null ? "" : String(applied.savedAtMs),
      policyDescription: describeAppliedPolicy(applied),
      noPolicySince: applied === null ? String(this.#startedAtMs) : "",
      noPolicyAction: report.withoutPolicy.action,
      noPolicyDecisions: String(report.withoutPolicy.decisions),
    };
    try {
      const error = await execEach([
        redis.multi().hset(key, fields).pexpire(key, ttlMs),
        redis
          .multi()
          .zadd(names.enforcers, nowMs, enforcerId)
          .zremrangebyscore(names.enforcers, "-inf", nowMs - ENFORCER_SET_RETENTION_MS),
      ]);
      if (error !== null) throw error;
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
      await execEach([
        redis.multi().del(names.enforcer(enforcerId)),
        redis.multi().zrem(names.enforcers, enforcerId),
      ]);
    } catch {
      // The hash expires by itself.
    }
  }
}

export interface MetricsFlusherOptions {
  readonly redis: ReportingRedis;
  readonly names: EnforcerRedisNames;
  /** The installation's key prefix, for the per-minute rejection tally (`rejection-tally.ts`). */
  readonly prefix: string;
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
   * connected nothing is drained, so the counts wait in process; a flush whose transactions fail
   * once sent is not retried (some may have been applied: a retry could count twice), and is
   * counted in `lostFlushCount`.
   */
  async flush(): Promise<void> {
    const { redis, names, metrics, recentRejections } = this.#options;
    if (redis.status !== "ready") return;
    const buckets = metrics.drain();
    const rejections = recentRejections.drain();
    if (buckets.length === 0 && rejections.length === 0) return;

    // One transaction per key (see the module comment).
    const transactions: ChainableCommander[] = [];
    // Per-minute deltas are summed here first: one HINCRBY per field and minute, not per second.
    const minutes = new Map<number, Map<string, number>>();
    for (const bucket of buckets) {
      const fields = bucketFields(bucket);
      const secondKey = names.metricsSecond(Math.floor(bucket.startMs / 1000));
      const tx = redis.multi();
      for (const [field, value] of fields) tx.hincrby(secondKey, field, value);
      tx.pexpire(secondKey, this.#options.secondBucketTtlMs);
      transactions.push(tx);
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
      const tx = redis.multi();
      for (const [field, value] of sums) tx.hincrby(minuteKey, field, value);
      tx.pexpire(minuteKey, this.#options.minuteBucketTtlMs);
      transactions.push(tx);
    }

    // Per customer, its rejections oldest first; only the newest `keep` are listed, so only
    // those are turned into text (in `#writeRejectionLists`).
    const byCustomer = new Map<string, CustomerRejection[]>();
    const latestAtMs = new Map<string, number>();
    for (const rejection of rejections) {
      const list = byCustomer.get(rejection.customerId);
      if (list === undefined) byCustomer.set(rejection.customerId, [rejection]);
      else list.push(rejection);
      latestAtMs.set(
        rejection.customerId,
        Math.max(latestAtMs.get(rejection.customerId) ?? 0, rejection.atMs),
      );
    }
    const scores: (string | number)[] = [];
    for (const customerId of byCustomer.keys()) {
      scores.push(latestAtMs.get(customerId) ?? 0, customerId);
    }
    transactions.push(...this.#tallyTransactions(rejections, recentRejections.drainAnonymous()));
    if (byCustomer.size > 0) {
      transactions.push(
        redis
          .multi()
          .zadd(names.rejectedCustomers, ...scores)
          .zremrangebyrank(names.rejectedCustomers, 0, -(REJECTED_CUSTOMERS_KEPT + 1)),
      );
    }

    try {
      const [error] = await Promise.all([
        execEach(transactions),
        this.#writeRejectionLists(byCustomer),
      ]);
      if (error !== null) throw error;
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

  /**
   * The per-minute rejection tally (`rejection-tally.ts`): each customer-and-limit pair's
   * rejections added into its minute's sorted set, which keeps the largest counts. One
   * transaction per minute key.
   */
  #tallyTransactions(
    rejections: readonly CustomerRejection[],
    anonymous: readonly AnonymousRejections[],
  ): ChainableCommander[] {
    const byMinute = new Map<number, Map<string, number>>();
    const add = (minute: number, member: string, count: number) => {
      let counts = byMinute.get(minute);
      if (counts === undefined) {
        counts = new Map();
        byMinute.set(minute, counts);
      }
      counts.set(member, (counts.get(member) ?? 0) + count);
    };
    for (const rejection of rejections) {
      const minute = Math.floor(rejection.atMs / 60_000);
      add(minute, rejectionTallyMember(rejection.customerId, rejection.scope), rejection.count);
    }
    // Requests without a customer, per limit: no address leaves the process.
    for (const entry of anonymous) {
      add(entry.epochMinute, rejectionTallyMember(ANONYMOUS_TALLY_ID, entry.scope), entry.count);
    }
    const transactions: ChainableCommander[] = [];
    for (const [minute, counts] of byMinute) {
      const key = rejectionTallyKey(this.#options.prefix, minute);
      const tx = this.#options.redis.multi();
      for (const [member, count] of counts) tx.zincrby(key, count, member);
      tx.zremrangebyrank(key, 0, -(REJECTION_TALLY_KEPT + 1));
      tx.pexpire(key, this.#options.minuteBucketTtlMs);
      transactions.push(tx);
    }
    return transactions;
  }

  /**
   * Each rejected customer's list: the newest rejections pushed (newest at the head), trimmed to
   * `rejectionsPerCustomer`, its expiry renewed. One script call per chunk of customers (per hash
   * slot on Redis Cluster, where a script's keys must share one), and a turn of the event loop
   * between chunks: a gateway rejecting a thousand customers a second spent a hundred
   * milliseconds at a stretch building one transaction per customer, which every request
   * waiting behind it paid for (the rejection workloads' p99). Rejects with the first error.
   */
  async #writeRejectionLists(byCustomer: ReadonlyMap<string, CustomerRejection[]>): Promise<void> {
    const { redis, names, enforcerId, rejectionsPerCustomer: keep } = this.#options;
    const isCluster = (redis as { readonly isCluster?: boolean }).isCluster === true;
    const chunks = new Map<number, { keys: string[]; args: string[] }>();
    // Each call's failure is caught as it is sent: the loop yields between chunks, and a call
    // that failed meanwhile must not be an unhandled rejection (which would end the process).
    const calls: Promise<void>[] = [];
    let failure: { readonly error: unknown } | null = null;
    let listed = 0;
    const quotes = new Map<string | null, string>();
    const quoted = (text: string | null): string => {
      let json = quotes.get(text);
      if (json === undefined) {
        json = JSON.stringify(text);
        quotes.set(text, json);
      }
      return json;
    };
    const quotedId = quoted(enforcerId);
    const send = (chunk: { keys: string[]; args: string[] }) => {
      calls.push(
        redis
          .eval(
            REJECTION_LISTS_LUA,
            chunk.keys.length,
            ...chunk.keys,
            String(keep),
            String(this.#options.rejectionsTtlMs),
            ...chunk.args,
          )
          .then(
            () => undefined,
            (error: unknown) => {
              failure ??= { error };
            },
          ),
      );
    };
    for (const [customerId, rejections] of byCustomer) {
      const key = names.rejections(customerId);
      const slot = isCluster ? calculateSlot(key) : 0;
      let chunk = chunks.get(slot);
      if (chunk === undefined) {
        chunk = { keys: [], args: [] };
        chunks.set(slot, chunk);
      }
      const newest = rejections.length > keep ? rejections.slice(-keep) : rejections;
      chunk.keys.push(key);
      chunk.args.push(String(newest.length));
      for (const rejection of newest) {
        // What JSON.stringify of { atMs, firstAtMs, count, scope, endpointClass, enforcerId }
        // writes, with the quoted strings made once per flush (a few distinct ones, thousands of
        // entries).
        chunk.args.push(
          `{"atMs":${JSON.stringify(rejection.atMs)},"firstAtMs":${JSON.stringify(rejection.firstAtMs)},"count":${JSON.stringify(rejection.count)},"scope":${quoted(rejection.scope)},"endpointClass":${quoted(rejection.endpointClass)},"enforcerId":${quotedId}}`,
        );
      }
      if (chunk.keys.length >= REJECTION_LISTS_PER_CALL) {
        chunks.delete(slot);
        send(chunk);
      }
      if (++listed % REJECTION_LISTS_PER_TURN === 0) {
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    }
    for (const chunk of chunks.values()) send(chunk);
    await Promise.all(calls);
    if (failure !== null) throw (failure as { readonly error: unknown }).error;
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
