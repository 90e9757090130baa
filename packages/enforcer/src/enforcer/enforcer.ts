/**
 * The enforcer runtime a gateway embeds: `createEnforcer(options)` connects to Redis, follows the
 * published policy, decides requests against the shared store, and reports what it runs and what
 * it decided. See README.md ("Embedding").
 *
 * Startup without Redis: `createEnforcer` waits up to `startupWaitMs` (5 s) for a first snapshot
 * and then returns anyway; it never throws because Redis is unreachable. Until a snapshot is in
 * force there is no limit to check, so requests are admitted (`source: "no-policy"`, counted) and
 * `status().isReady` is false, which the gateway should expose to its load balancer (the demo's
 * `/healthz` answers 503). To enforce from the first request whatever Redis does, pass
 * `bootstrapSnapshot` (a snapshot shipped with the gateway); a newer published one replaces it.
 * Once a snapshot is in force, losing Redis changes nothing about the policy: the last good one
 * stays, and each limit's failure policy decides.
 */
import { createHash, randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { Clock } from "../limiter/clock";
import { wallClock as defaultWallClock, monotonicClock } from "../limiter/clock";
import { RedisStore } from "../limiter/stores/redis";
import { systemTimers, type TimerHandle, type Timers } from "../limiter/timers";
import type { LimiterStore } from "../limiter/types";
import type { PolicyStateSize } from "../policy/policy-state";
import type { TSnapshot } from "../policy/schemas";
import {
  createRedisClient,
  type RedisClient,
  type RedisClusterNode,
} from "../publication/redis-clients";
import { enforcerRedisNames } from "../publication/redis-keys";
import { TrafficRecorder, type TrafficRecordingOptions } from "../recording/traffic-recorder";
import type { BreakerSnapshot, CircuitBreakerOptions } from "./circuit-breaker";
import {
  DecisionEngine,
  type EnforcerRequest,
  type EnforcerResult,
  type RequestChecker,
} from "./decision-engine";
import type { DecisionMetricsOptions, MetricsFigures } from "./decision-metrics";
import { type EventLoopDelay, EventLoopDelayMonitor } from "./event-loop-delay";
import type { LeaseFigures, LeaseOptions } from "./lease-table";
import type { LocalStageOptions } from "./local-stage";
import { describeError, type EnforcerLogger, jsonLineLogger } from "./logger";
import { type AppliedSnapshot, PolicyFollower, type SnapshotErrorReport } from "./policy-follower";
import { escapeLabelValue, renderPrometheus } from "./prometheus";
import type { RecentRejectionsOptions } from "./recent-rejections";
import { MetricsFlusher, runEvery, StatusReporter } from "./reporters";
import type { ResolutionCacheOptions } from "./resolution-cache";
import { SeenCustomers, type SeenCustomersOptions, SeenCustomersReporter } from "./seen-customers";
import { STORE_FAILURES, type StoreFailure } from "./types";

/**
 * The Redis connections an enforcer uses, one per role (`createRedisClient` in the package's
 * `/publication` entry makes them with the timeouts each role needs).
 */
export interface EnforcerClients {
  /**
   * The hot path: fails at once when disconnected, so the failure policy decides. Its command
   * timeout must exceed `maxWaitMs`, or a slow call is given up by the client before the enforcer
   * stops waiting for it.
   */
  readonly decisions: RedisClient;
  /** Snapshot reads, heartbeats, metrics. */
  readonly control: RedisClient;
  /** Policy announcements. */
  readonly subscriber: RedisClient;
}

export interface EnforcerOptions {
  /**
   * How many gateways share the traffic. Divides every `local` limit while Redis is unreachable
   * (each gateway then admits its share). No default: too high rejects customers for our outage,
   * too low multiplies the limit.
   */
  readonly expectedGateways: number;
  /**
   * The shared Redis, as a `redis://` or `rediss://` URL: the enforcer opens its three connections
   * and closes them on `stop()`. Give this or `clients`, not both.
   */
  readonly redisUrl?: string;
  /**
   * Seed nodes of a Redis Cluster: the three connections are then ioredis `Cluster` clients, and
   * `redisUrl` says only how to reach the nodes (`rediss://` for TLS, its username and password
   * for every node); its host, port and database are not used.
   * @default none: one Redis at `redisUrl`
   */
  readonly redisClusterNodes?: readonly RedisClusterNode[];
  /**
   * Connections you made and own (the enforcer never closes them). The `decisions` one should
   * fail fast (no offline queue), as `createRedisClient("decisions", ...)` makes it.
   */
  readonly clients?: EnforcerClients;
  /**
   * Prefix of every key and channel; the control plane's `REDIS_KEY_PREFIX`.
   * @default "lp:"
   */
  readonly keyPrefix?: string;
  /**
   * This enforcer's name in heartbeats and the console; unique per process.
   * @default `<hostname>-<pid>-<4 random hex bytes>`
   */
  readonly enforcerId?: string;
  /**
   * The shared store, made from the `decisions` client. Pass a `MemoryStore` to run one gateway
   * without shared state (tests, local development).
   * @default a RedisStore on the `decisions` client (one Lua script per layered decision)
   */
  readonly store?: (clients: EnforcerClients, keyPrefix: string) => LimiterStore;
  /**
   * Decisions the default RedisStore sends in one script call when they arrive in the same
   * event-loop turn (each is still one layered decision, atomic; see `RedisStoreOptions`). On
   * Redis Cluster the batches are per hash slot.
   * @default 64
   */
  readonly storeBatchSize?: number;
  /**
   * How long a store call may go unanswered before the enforcer looks at the connection: down,
   * and each limit's failure policy answers at once; up, and the call is only slow, so it is
   * waited for (up to `maxWaitMs`). See README "Slow versus down".
   * @default 50
   */
  readonly timeoutMs?: number;
  /**
   * The longest one decision waits for a Redis that is connected but slow (a busy host), in all,
   * before its failure policy answers. A busy gateway serves slower; it never serves unlimited.
   * At least `timeoutMs`, at most 60 000.
   * @default 1_000 (or `timeoutMs`, if longer)
   */
  readonly maxWaitMs?: number;
  /** @default 5 consecutive failures or >= 50 % of >= 20 calls in 10 s open it; 2 s cool-down */
  readonly breaker?: Omit<CircuitBreakerOptions, "clock">;
  /** Least `Retry-After` a `closed` limit tells while Redis is down. @default 1_000 */
  readonly closedRetryAfterMs?: number;
  /** The local first stage, or false. See `DecisionEngineOptions.localStage`. @default {} */
  readonly localStage?: LocalStageOptions | false;
  /**
   * Leases: a busy subject's budget reserved in Redis in slices for this gateway, spent here
   * without a Redis call and never beyond the limit (see README "Leases"), or false to ask Redis
   * for every admission. Only with the default RedisStore (or a store that leases).
   * @default {}: at most 1 000 units and 1 s a lease, 10 000 subjects
   */
  readonly leases?: Omit<LeaseOptions, "clock" | "keepsStoreTime"> | false;
  /**
   * The memo of resolutions of customers without overrides, per snapshot (one per customer, tier
   * and route seen while one snapshot is in force). @default { maxEntries: 10_000 }
   */
  readonly resolutionCache?: ResolutionCacheOptions;
  /** How often the stored policy version is checked, healing missed announcements. @default 2_000 */
  readonly pollIntervalMs?: number;
  /**
   * How long `createEnforcer` waits for a first snapshot before returning (plus at most the
   * control connection's command timeout, 1 s, if Redis is unreachable).
   * @default 5_000
   */
  readonly startupWaitMs?: number;
  /** A snapshot to enforce until Redis provides a newer one. @default none */
  readonly bootstrapSnapshot?: TSnapshot | string;
  /**
   * Customers with overrides whose prepared rules are cached per generation: at most twice this
   * many are held; the others' overrides are kept compact and prepared when one of their
   * requests arrives (a few microseconds).
   * @default 10_000
   */
  readonly policyCustomerCacheSize?: number;
  /** @default 1_000 */
  readonly heartbeatIntervalMs?: number;
  /** How long the heartbeat hash outlives its last beat. @default 10_000 */
  readonly heartbeatTtlMs?: number;
  /** @default 1_000 */
  readonly metricsFlushIntervalMs?: number;
  /** Lifetime of the per-second metrics hashes. @default 10_800_000 (3 h) */
  readonly secondBucketTtlMs?: number;
  /** Lifetime of the per-minute metrics hashes the worker rolls up. @default 21_600_000 (6 h) */
  readonly minuteBucketTtlMs?: number;
  /** Rejections kept per customer in Redis. @default 50 */
  readonly rejectionsPerCustomer?: number;
  /** Lifetime of a customer's rejection list after its latest rejection. @default 3_600_000 (1 h) */
  readonly rejectionsTtlMs?: number;
  /** @default {} */
  readonly metrics?: Omit<DecisionMetricsOptions, "wallClock">;
  /** In-process record feeding the Redis lists. @default {} */
  readonly recentRejections?: Omit<RecentRejectionsOptions, "clock" | "wallClock">;
  /**
   * Reporting the identified customers this gateway sees (and their tiers) for the console,
   * bounded per hour (see `seen-customers.ts`), or false.
   * @default {}: at most 1 000 customers an hour
   */
  readonly seenCustomers?: SeenCustomersOptions | false;
  /** @default JSON lines on stderr */
  readonly logger?: EnforcerLogger;
  /** @default monotonicClock */
  readonly clock?: Clock;
  /** @default Date.now */
  readonly wallClock?: Clock;
  /** @default systemTimers */
  readonly timers?: Timers;
  /**
   * Record every decision for backtests (`@limitplane/enforcer/recording`): appended to a bounded
   * buffer on the decision path, written to this gateway's Redis Stream on a timer.
   * @default none (nothing recorded)
   */
  readonly recording?: TrafficRecordingOptions;
}

/** What an enforcer reports about itself (the demo's `/healthz`). */
export interface EnforcerStatus {
  readonly enforcerId: string;
  /** A policy snapshot is in force. */
  readonly isReady: boolean;
  readonly policy: AppliedSnapshot | null;
  /**
   * What the policy in force holds: entries, customer overrides, the distinct limits they share,
   * and the customers whose rules are prepared now (bounded: see `policyCustomerCacheSize`).
   */
  readonly policySize: PolicyStateSize | null;
  readonly snapshotErrors: SnapshotErrorReport;
  readonly breaker: BreakerSnapshot;
  /** ioredis connection states (`ready` when connected). */
  readonly redis: {
    readonly decisions: string;
    readonly control: string;
    readonly subscriber: string;
  };
  /** Metrics flushes lost to a failed MULTI. */
  readonly lostMetricsFlushes: number;
  /**
   * Decisions made without the store since start, by why: `store-error` (the store is down or
   * refused), `timeout` (no answer in time), `circuit-open` (the breaker answered). Each one was
   * decided by its limits' failure policies.
   */
  readonly decisionsWithoutStore: Readonly<Record<StoreFailure, number>>;
  /** Store decisions that came late (after `timeoutMs`) and were waited for, since start. */
  readonly slowStoreDecisions: number;
  /** This process's event-loop delay over the last heartbeat interval. */
  readonly eventLoopDelay: EventLoopDelay;
}

export class Enforcer implements RequestChecker {
  readonly enforcerId: string;
  readonly keyPrefix: string;
  readonly #engine: DecisionEngine;
  readonly #store: LimiterStore;
  readonly #follower: PolicyFollower;
  readonly #clients: EnforcerClients;
  readonly #ownsClients: boolean;
  readonly #status: StatusReporter;
  readonly #flusher: MetricsFlusher;
  readonly #seen: SeenCustomers | null;
  readonly #seenReporter: SeenCustomersReporter | null;
  readonly #timers: Timers;
  readonly #logger: EnforcerLogger;
  readonly #heartbeatIntervalMs: number;
  readonly #metricsFlushIntervalMs: number;
  readonly #startupWaitMs: number;
  readonly #clock: Clock;
  readonly #wallClock: Clock;
  readonly #loopDelay = new EventLoopDelayMonitor();
  /** The traffic record, when `recording` was given. */
  readonly recorder: TrafficRecorder | null;
  #loops: TimerHandle[] = [];
  #isStoreFailing = false;
  #isStopped = false;

  /** Use `createEnforcer`, which also starts it. */
  constructor(options: EnforcerOptions) {
    if ((options.redisUrl === undefined) === (options.clients === undefined)) {
      throw new TypeError("createEnforcer: give either redisUrl or clients (exactly one)");
    }
    this.keyPrefix = options.keyPrefix ?? "lp:";
    this.enforcerId =
      options.enforcerId ?? `${hostname()}-${process.pid}-${randomBytes(4).toString("hex")}`;
    const clock = options.clock ?? monotonicClock;
    this.#clock = clock;
    const wallClock = options.wallClock ?? defaultWallClock;
    this.#wallClock = wallClock;
    this.#timers = options.timers ?? systemTimers;
    this.#logger = options.logger ?? jsonLineLogger({ enforcerId: this.enforcerId });
    this.#heartbeatIntervalMs = options.heartbeatIntervalMs ?? 1_000;
    this.#metricsFlushIntervalMs = options.metricsFlushIntervalMs ?? 1_000;
    this.#startupWaitMs = options.startupWaitMs ?? 5_000;
    const storeBatchSize = options.storeBatchSize ?? 64;
    const makeStore =
      options.store ??
      ((clients: EnforcerClients, keyPrefix: string) =>
        new RedisStore({ client: clients.decisions, keyPrefix, maxBatchSize: storeBatchSize }));

    this.#ownsClients = options.clients === undefined;
    const maxWaitMs = options.maxWaitMs ?? Math.max(1_000, options.timeoutMs ?? 50);
    this.#clients =
      options.clients ??
      this.#openClients(options.redisUrl ?? "", options.redisClusterNodes ?? [], maxWaitMs);
    const names = enforcerRedisNames(this.keyPrefix);

    this.#follower = new PolicyFollower({
      redis: this.#clients.control,
      subscriber: this.#clients.subscriber,
      prefix: this.keyPrefix,
      pollIntervalMs: options.pollIntervalMs,
      bootstrapSnapshot: options.bootstrapSnapshot,
      customerCacheSize: options.policyCustomerCacheSize,
      // Node's SHA-256: the same digests as the portable one, several times faster on the
      // million entries a large policy's snapshot holds.
      sha256Hex: (text) => createHash("sha256").update(text).digest("hex"),
      logger: this.#logger,
      wallClock,
      timers: this.#timers,
    });

    this.recorder =
      options.recording === undefined
        ? null
        : new TrafficRecorder({
            ...options.recording,
            gatewayId: this.enforcerId,
            redis: this.#clients.control,
            prefix: this.keyPrefix,
          });
    this.#store = makeStore(this.#clients, this.keyPrefix);
    this.#engine = new DecisionEngine({
      recorder: this.recorder ?? undefined,
      store: this.#store,
      snapshot: () => this.#follower.current,
      expectedGateways: options.expectedGateways,
      timeoutMs: options.timeoutMs,
      maxWaitMs,
      // Connected (a Cluster: ready, slots known) means a late answer is a slow one, waited for.
      isStoreReachable: () => this.#clients.decisions.status === "ready",
      breaker: options.breaker,
      closedRetryAfterMs: options.closedRetryAfterMs,
      localStage: options.localStage,
      leases: options.leases,
      resolutionCache: options.resolutionCache,
      metrics: options.metrics,
      recentRejections: options.recentRejections,
      clock,
      wallClock,
      timers: this.#timers,
      onStoreError: (error) => {
        // Once per outage (until the heartbeat sees the store healthy again); the metrics and the
        // breaker state in the heartbeat say the rest.
        if (this.#isStoreFailing) return;
        this.#isStoreFailing = true;
        this.#logger.log("warn", "limiter store call failed; failure policies decide", {
          error: describeError(error),
        });
      },
    });

    this.#status = new StatusReporter({
      redis: this.#clients.control,
      names,
      enforcerId: this.enforcerId,
      report: () => ({
        applied: this.#follower.applied,
        snapshotErrors: this.#follower.errors,
        breaker: this.#engine.breaker,
        degradedByFailure: this.#engine.metrics.totals().degradedByFailure,
        slowStoreDecisions: this.#engine.slowStoreDecisionCount,
        eventLoopDelay: this.#loopDelay.last,
      }),
      ttlMs: options.heartbeatTtlMs ?? 10_000,
      wallClock,
      logger: this.#logger,
    });
    this.#flusher = new MetricsFlusher({
      redis: this.#clients.control,
      names,
      enforcerId: this.enforcerId,
      metrics: this.#engine.metrics,
      recentRejections: this.#engine.recentRejections,
      secondBucketTtlMs: options.secondBucketTtlMs ?? 10_800_000,
      minuteBucketTtlMs: options.minuteBucketTtlMs ?? 21_600_000,
      rejectionsPerCustomer: options.rejectionsPerCustomer ?? 50,
      rejectionsTtlMs: options.rejectionsTtlMs ?? 3_600_000,
      logger: this.#logger,
    });
    this.#seen =
      options.seenCustomers === false
        ? null
        : new SeenCustomers({ ...options.seenCustomers, wallClock });
    this.#seenReporter =
      this.#seen === null
        ? null
        : new SeenCustomersReporter({
            redis: this.#clients.control,
            prefix: this.keyPrefix,
            enforcerId: this.enforcerId,
            seen: this.#seen,
            logger: this.#logger,
          });
    // Report a new version or a refusal at once, not at the next beat: the console's lag is
    // measured on it.
    this.#follower.onApplied(() => {
      void this.#status.beat();
    });
    this.#follower.onRefused(() => {
      void this.#status.beat();
    });
  }

  #openClients(
    url: string,
    clusterNodes: readonly RedisClusterNode[],
    maxWaitMs: number,
  ): EnforcerClients {
    const connectionName = (role: string) => `limitplane-enforcer-${role}-${this.enforcerId}`;
    return {
      decisions: createRedisClient("decisions", {
        url,
        clusterNodes,
        connectionName: connectionName("d"),
        // The client must not give up on a slow call before the enforcer does.
        commandTimeoutMs: maxWaitMs + 250,
      }),
      control: createRedisClient("control", {
        url,
        clusterNodes,
        connectionName: connectionName("c"),
      }),
      subscriber: createRedisClient("subscriber", {
        url,
        clusterNodes,
        connectionName: connectionName("s"),
      }),
    };
  }

  /**
   * Subscribes, reads the policy, starts the heartbeat and the metrics flush, and waits up to
   * `startupWaitMs` for a first snapshot. Resolves whether a snapshot is in force.
   */
  async start(): Promise<boolean> {
    const startedAtMs = this.#clock.nowMs();
    await this.#follower.start(Math.min(this.#startupWaitMs, 1_000));
    const leftMs = Math.max(0, this.#startupWaitMs - (this.#clock.nowMs() - startedAtMs));
    const hasPolicy = await this.#follower.waitForSnapshot(leftMs);
    if (!hasPolicy) {
      this.#logger.log("warn", "no policy snapshot yet; admitting requests until one arrives", {
        waitedMs: this.#startupWaitMs,
      });
    }
    this.#loopDelay.start();
    await this.#status.beat();
    this.#loops.push(
      runEvery(this.#timers, this.#heartbeatIntervalMs, () => {
        this.#noticeStoreRecovery();
        this.#loopDelay.rotate();
        return this.#status.beat();
      }),
      runEvery(this.#timers, this.#metricsFlushIntervalMs, () =>
        Promise.all([this.#flusher.flush(), this.#seenReporter?.flush()]).then(() => undefined),
      ),
    );
    const recorder = this.recorder;
    if (recorder !== null)
      this.#loops.push(runEvery(this.#timers, recorder.flushIntervalMs, () => recorder.flush()));
    return hasPolicy;
  }

  #noticeStoreRecovery(): void {
    if (!this.#isStoreFailing) return;
    const breaker = this.#engine.breaker.snapshot();
    if (breaker.state !== "closed" || breaker.consecutiveFailures > 0) return;
    this.#isStoreFailing = false;
    this.#logger.log("info", "limiter store answering again");
  }

  /** Decides one request. See `DecisionEngine.check`. */
  async check(request: EnforcerRequest): Promise<EnforcerResult> {
    return this.checkNow(request);
  }

  /**
   * Decides one request, answering at once when no store call is needed. See
   * `DecisionEngine.checkNow`.
   */
  checkNow(request: EnforcerRequest): EnforcerResult | Promise<EnforcerResult> {
    const wallNowMs = this.#wallClock.nowMs();
    // Throws, before any store call, for an id the engine refuses: what is recorded below is an
    // id it accepted.
    const result = this.#engine.checkNow(request, wallNowMs);
    // Identified customers only (`identify`'s answer).
    if (request.customerId != null) {
      this.#seen?.record(request.customerId, request.tier, wallNowMs);
    }
    return result;
  }

  /** Calls `listener` after every policy snapshot applied. Returns the unsubscribe. */
  onPolicyApplied(listener: (applied: AppliedSnapshot) => void): () => void {
    return this.#follower.onApplied(listener);
  }

  /** Reads the stored policy now (as a poll would). */
  refreshPolicy(): Promise<void> {
    return this.#follower.refresh("poll");
  }

  /** What the leases did since start (all zero when leases are off or the store cannot lease). */
  leaseFigures(): LeaseFigures {
    return (
      this.#engine.leases?.figures() ?? {
        admitted: 0,
        grantedUnits: 0,
        expiredUnits: 0,
        subjects: 0,
        inFlight: 0,
      }
    );
  }

  /** Counts since start, for Prometheus or a status page. */
  metricsTotals(): MetricsFigures {
    return this.#engine.metrics.totals();
  }

  status(): EnforcerStatus {
    return {
      enforcerId: this.enforcerId,
      isReady: this.#follower.current !== null,
      policy: this.#follower.applied,
      policySize: this.#follower.size,
      snapshotErrors: this.#follower.errors,
      breaker: this.#engine.breaker.snapshot(),
      redis: {
        decisions: this.#clients.decisions.status,
        control: this.#clients.control.status,
        subscriber: this.#clients.subscriber.status,
      },
      lostMetricsFlushes: this.#flusher.lostFlushCount,
      decisionsWithoutStore: this.#engine.metrics.totals().degradedByFailure,
      slowStoreDecisions: this.#engine.slowStoreDecisionCount,
      eventLoopDelay: this.#loopDelay.last,
    };
  }

  /**
   * The Prometheus text exposition: `renderPrometheus` of the totals labelled with this
   * enforcer's id, plus the policy version in force, refused snapshots, the breaker state, the
   * decisions made without Redis by reason, slow store decisions and the event-loop delay.
   */
  prometheus(): string {
    const labels = { enforcer: this.enforcerId };
    const id = escapeLabelValue(this.enforcerId);
    const label = `{enforcer="${id}"}`;
    const status = this.status();
    const delay = status.eventLoopDelay;
    const leases = this.leaseFigures();
    const extra = [
      "# HELP limitplane_decisions_without_store_total Decisions made without Redis, by why: store-error (down or refusing), timeout (no answer in time), circuit-open (the breaker answered). Each was decided by its limits' failure policies; 0 while Redis is healthy.",
      "# TYPE limitplane_decisions_without_store_total counter",
      ...STORE_FAILURES.map(
        (failure) =>
          `limitplane_decisions_without_store_total{enforcer="${id}",reason="${failure}"} ${status.decisionsWithoutStore[failure]}`,
      ),
      "# HELP limitplane_store_slow_decisions_total Store decisions that came after the timeout and were waited for (Redis connected but slow, or this host busy) instead of decided without Redis.",
      "# TYPE limitplane_store_slow_decisions_total counter",
      `limitplane_store_slow_decisions_total${label} ${status.slowStoreDecisions}`,
      "# HELP limitplane_event_loop_delay_seconds This process's event-loop delay over the last heartbeat interval (monitorEventLoopDelay, beyond its 10 ms sampling interval): how late timers and I/O callbacks ran.",
      "# TYPE limitplane_event_loop_delay_seconds gauge",
      `limitplane_event_loop_delay_seconds{enforcer="${id}",quantile="0.5"} ${delay.p50Ms / 1000}`,
      `limitplane_event_loop_delay_seconds{enforcer="${id}",quantile="0.99"} ${delay.p99Ms / 1000}`,
      `limitplane_event_loop_delay_seconds{enforcer="${id}",quantile="1"} ${delay.maxMs / 1000}`,
      "# HELP limitplane_lease_units_total Units of cost leased from Redis for this gateway alone, by what became of them: granted, or expired (the lease ended, was dropped or outlived its policy before they were spent; another gateway may have been rejected slightly early meanwhile).",
      "# TYPE limitplane_lease_units_total counter",
      `limitplane_lease_units_total{enforcer="${id}",state="granted"} ${leases.grantedUnits}`,
      `limitplane_lease_units_total{enforcer="${id}",state="expired"} ${leases.expiredUnits}`,
      "# HELP limitplane_policy_version The policy snapshot version in force (0: none yet).",
      "# TYPE limitplane_policy_version gauge",
      `limitplane_policy_version${label} ${status.policy?.version ?? 0}`,
      "# HELP limitplane_policy_snapshot_errors_total Published snapshots refused as invalid.",
      "# TYPE limitplane_policy_snapshot_errors_total counter",
      `limitplane_policy_snapshot_errors_total${label} ${status.snapshotErrors.count}`,
      "# HELP limitplane_circuit_open Whether the store's circuit breaker is open (1) or not (0).",
      "# TYPE limitplane_circuit_open gauge",
      `limitplane_circuit_open${label} ${status.breaker.state === "open" ? 1 : 0}`,
    ];
    return `${renderPrometheus(this.metricsTotals(), { constantLabels: labels })}${extra.join("\n")}\n`;
  }

  /**
   * Stops following the policy, flushes the metrics a last time, removes the heartbeat and closes
   * the Redis connections it opened (never `clients` that were passed in). Safe to call twice.
   */
  async stop(): Promise<void> {
    if (this.#isStopped) return;
    this.#isStopped = true;
    for (const loop of this.#loops) loop.cancel();
    this.#loops = [];
    this.#loopDelay.stop();
    await this.#follower.stop();
    // Lease refills held back for company go now, ahead of the QUIT below, so they are answered.
    this.#store.sendHeld?.();
    await this.#flusher.flush();
    await this.#seenReporter?.flush();
    await this.recorder?.flush().catch(() => undefined);
    await this.#status.remove();
    if (!this.#ownsClients) return;
    await Promise.all(
      Object.values(this.#clients).map((client: RedisClient) =>
        Promise.race([client.quit().catch(() => undefined), delay(this.#timers, 1_000)]).then(() =>
          client.disconnect(),
        ),
      ),
    );
  }
}

function delay(timers: Timers, ms: number): Promise<void> {
  return new Promise((resolve) => {
    timers.setTimer(resolve, ms);
  });
}

/**
 * Creates an enforcer and starts it (see {@link Enforcer.start}): ready to `check` when it
 * resolves, with the published policy in force unless Redis gave none within `startupWaitMs`.
 */
export async function createEnforcer(options: EnforcerOptions): Promise<Enforcer> {
  const enforcer = new Enforcer(options);
  await enforcer.start();
  return enforcer;
}
