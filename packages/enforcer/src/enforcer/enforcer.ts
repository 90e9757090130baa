/**
 * The enforcer runtime a gateway embeds: `createEnforcer(options)` connects to Redis, takes its
 * limits from code (`policy`) or follows the policy the control plane publishes, decides requests
 * against the shared store, and reports what it runs and what it decided. docs/embedding.md
 * explains each part; `enforcer-options.ts` the options.
 *
 * Startup without Redis: `createEnforcer` never throws because Redis is unreachable; it logs one
 * error line naming the Redis it could not reach, and each limit's failure policy decides until
 * Redis answers. With limits in code, they are in force from the first request. Following the
 * control plane, it waits up to `controlPlane.startupWaitMs` (5 s) for a first snapshot and then
 * returns anyway: until a snapshot is in force there is no limit to check, so requests are
 * admitted (`source: "no-policy"`, counted), `status().isReady` is false (expose it to the load
 * balancer), and a warning names the key it waited on. `controlPlane.bootstrapSnapshot` enforces
 * a known snapshot from the first request instead; a newer published one replaces it.
 * `controlPlane.policyCache` keeps the last good policy on disk and enforces it when the wait ends
 * with none (`policy-cache.ts`). Once a snapshot is in force, losing Redis changes nothing about
 * the policy: the last good one stays.
 */
import { createHash, randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { Clock } from "../limiter/clock";
import { wallClock as defaultWallClock, monotonicClock } from "../limiter/clock";
import { RedisStore } from "../limiter/stores/redis";
import { systemTimers, type TimerHandle, type Timers } from "../limiter/timers";
import type { LimiterStore } from "../limiter/types";
import type { DescriptorEntry } from "../policy/descriptor-rules";
import type { PolicyStateSize } from "../policy/policy-state";
import { globalLimitScopes, type PreparedSnapshot } from "../policy/prepare";
import type { TDescriptorMapping, TSnapshotOutboundBudget } from "../policy/schemas";
import { policyRedisNames } from "../publication/keys";
import {
  type CreateRedisOptions,
  createRedisClient,
  type RedisClient,
} from "../publication/redis-clients";
import { enforcerRedisNames } from "../publication/redis-keys";
import { TrafficRecorder } from "../recording/traffic-recorder";
import { type CachedRejecter, registerCachedRejecter } from "./cached-rejection";
import type { BreakerSnapshot } from "./circuit-breaker";
import {
  DecisionEngine,
  type DescriptorDecision,
  type EnforcerRequest,
  type EnforcerResult,
  type LimitOverrideDecision,
  type RequestChecker,
} from "./decision-engine";
import type { MetricsFigures } from "./decision-metrics";
import {
  checkEnforcerOptions,
  type EnforcerClients,
  type EnforcerOptions,
  EnforcerOptionsError,
  redactedRedisUrl,
} from "./enforcer-options";
import { type EventLoopDelay, EventLoopDelayMonitor } from "./event-loop-delay";
import { GlobalBudgets, GlobalShareFollower } from "./global-budgets";
import type { LeaseFigures } from "./lease-table";
import { describeError, type EnforcerLogger, jsonLineLogger } from "./logger";
import { describeFileError, PolicyCacheWriter, readPolicyCache } from "./policy-cache";
import {
  type AppliedSnapshot,
  describeAppliedPolicy,
  PolicyFollower,
  type SnapshotErrorReport,
} from "./policy-follower";
import {
  type PrometheusFamily,
  type PrometheusSample,
  renderPrometheus,
  renderPrometheusFamilies,
} from "./prometheus";
import { RedisTopologyWatcher } from "./redis-topology";
import { MetricsFlusher, runEvery, StatusReporter } from "./reporters";
import { SeenCustomers, SeenCustomersReporter } from "./seen-customers";
import { STORE_FAILURES, type StoreFailure } from "./types";

/** What an enforcer reports about itself (the demo's `/healthz`). */
export interface EnforcerStatus {
  readonly enforcerId: string;
  /** A policy snapshot is in force. */
  readonly isReady: boolean;
  readonly policy: AppliedSnapshot | null;
  /**
   * The policy in force in words, as the heartbeat and the logs say it: `none`, `version 7`, or
   * `cached (version 7, saved at 2026-12-06T00:40:00.000Z)` while the one saved on disk stands in
   * (`controlPlane.policyCache`).
   */
  readonly policyDescription: string;
  /**
   * What the policy in force holds: entries, customer overrides, the distinct limits they share,
   * and the customers whose rules are prepared now (bounded: see `caches.preparedCustomers`).
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
  readonly #topology: RedisTopologyWatcher;
  readonly #flusher: MetricsFlusher;
  readonly #seen: SeenCustomers | null;
  readonly #seenReporter: SeenCustomersReporter | null;
  readonly #timers: Timers;
  readonly #logger: EnforcerLogger;
  readonly #heartbeatIntervalMs: number;
  readonly #metricsFlushIntervalMs: number;
  readonly #startupWaitMs: number;
  readonly #cacheSize: number | undefined;
  /** `controlPlane.policyCache`'s file and its writer; null without one. */
  readonly #policyCache: { readonly path: string; readonly writer: PolicyCacheWriter } | null;
  readonly #clock: Clock;
  readonly #wallClock: Clock;
  readonly #loopDelay = new EventLoopDelayMonitor();
  /** The traffic record, when `recording` was given. */
  readonly recorder: TrafficRecorder | null;
  /** `policy` was given: the limits are the code's, no published policy is followed. */
  readonly #isPolicyInCode: boolean;
  /** `redis.url` without its password, for log lines; null with `redis.clients`. */
  readonly #redisUrl: string | null;
  #lastRedisError: unknown = null;
  readonly #onDecisionsError = (error: unknown) => {
    this.#lastRedisError = error;
  };
  #loops: TimerHandle[] = [];
  /** The region's shares of the global limits, and their follower (not with limits in code). */
  readonly #globalBudgets: GlobalBudgets | null;
  readonly #globalShares: GlobalShareFollower | null;
  readonly #globalPollIntervalMs: number;
  #isStoreFailing = false;
  #isStopped = false;

  /**
   * Use `createEnforcer`, which also starts it. Throws {@link EnforcerOptionsError} for options it
   * cannot run with, before opening any connection.
   */
  constructor(options: EnforcerOptions) {
    const time = options?.time ?? {};
    const wallClock = time.wallClock ?? defaultWallClock;
    const bootstrapSnapshot = checkEnforcerOptions(options, wallClock.nowMs());
    const { redis } = options;
    this.#isPolicyInCode = options.policy !== undefined;
    this.keyPrefix = redis.keyPrefix ?? "lp:";
    this.#redisUrl = redis.url === undefined ? null : redactedRedisUrl(redis.url);
    this.enforcerId =
      options.enforcerId ?? `${hostname()}-${process.pid}-${randomBytes(4).toString("hex")}`;
    const clock = time.clock ?? monotonicClock;
    this.#clock = clock;
    this.#wallClock = wallClock;
    this.#timers = time.timers ?? systemTimers;
    registerCachedRejecter(this, this.#rejectFromCache);
    this.#logger = options.logger ?? jsonLineLogger({ enforcerId: this.enforcerId });
    const controlPlane = options.controlPlane ?? {};
    const reporting = options.reporting ?? {};
    const timeouts = options.timeouts ?? {};
    this.#heartbeatIntervalMs = reporting.heartbeatIntervalMs ?? 1_000;
    this.#metricsFlushIntervalMs = reporting.metricsFlushIntervalMs ?? 1_000;
    this.#startupWaitMs = controlPlane.startupWaitMs ?? 5_000;
    this.#cacheSize = options.caches?.preparedCustomers;
    const batchSize = redis.batchSize ?? 64;
    const makeStore =
      options.store ??
      ((clients: EnforcerClients, keyPrefix: string) =>
        new RedisStore({
          client: clients.decisions,
          keyPrefix,
          maxBatchSize: batchSize,
          replicated:
            clients.replicated === undefined
              ? undefined
              : { client: clients.replicated, waitMs: Math.max(1, Math.floor(maxWaitMs / 2)) },
        }));

    const maxWaitMs = timeouts.maxWaitMs ?? Math.max(1_000, timeouts.storeCallMs ?? 50);
    this.#ownsClients = redis.clients === undefined;
    this.#clients =
      redis.clients ??
      this.#openClients(
        { url: redis.url ?? "", clusterNodes: redis.clusterNodes, sentinel: redis.sentinel },
        maxWaitMs,
      );
    this.#clients.decisions.on("error", this.#onDecisionsError);
    const names = enforcerRedisNames(this.keyPrefix);
    // The parts below refuse values out of range with a RangeError naming the option: a
    // configuration mistake, reported as one, with the connections just opened closed again.
    try {
      this.#follower = new PolicyFollower({
        redis: this.#clients.control,
        subscriber: this.#clients.subscriber,
        prefix: this.keyPrefix,
        pollIntervalMs: controlPlane.pollIntervalMs,
        bootstrapSnapshot,
        customerCacheSize: options.caches?.preparedCustomers,
        // Node's SHA-256: the same digests as the portable one, several times faster on the
        // million entries a large policy's snapshot holds.
        sha256Hex: nodeSha256Hex,
        sha256Bytes: nodeSha256Bytes,
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
      this.#globalPollIntervalMs = options.globalBudgets?.pollIntervalMs ?? 100;
      this.#globalBudgets = this.#isPolicyInCode
        ? null
        : new GlobalBudgets({ floorShare: options.globalBudgets?.floorShare, clock });
      const follower = this.#follower;
      let scoped: { snapshot: PreparedSnapshot; scopes: readonly string[] } | null = null;
      this.#globalShares =
        this.#globalBudgets === null
          ? null
          : new GlobalShareFollower({
              redis: this.#clients.control,
              budgets: this.#globalBudgets,
              prefix: this.keyPrefix,
              clock,
              scopes: () => {
                const current = follower.current;
                if (current === null) return [];
                if (scoped?.snapshot !== current) {
                  scoped = { snapshot: current, scopes: globalLimitScopes(current) };
                }
                return scoped.scopes;
              },
            });
      this.#engine = new DecisionEngine({
        globalBudgets: this.#globalBudgets ?? undefined,
        recorder: this.recorder ?? undefined,
        store: this.#store,
        snapshot: () => this.#follower.current,
        expectedGateways: options.expectedGateways,
        timeoutMs: timeouts.storeCallMs,
        maxWaitMs,
        // Connected (a Cluster: ready, slots known) means a late answer is a slow one, waited for.
        isStoreReachable: () => this.#clients.decisions.status === "ready",
        breaker: timeouts.breaker,
        closedRetryAfterMs: timeouts.closedRetryAfterMs,
        withoutPolicy: controlPlane.withoutPolicy,
        localStage: options.local,
        leases: options.leases,
        resolutionCache:
          options.caches?.resolutions === undefined
            ? undefined
            : { maxEntries: options.caches.resolutions },
        metrics: reporting.metrics,
        recentRejections: reporting.recentRejections,
        clock,
        wallClock,
        timers: this.#timers,
        onStoreError: (error) => {
          // Once per outage (until the heartbeat sees the store healthy again); the metrics and
          // the breaker state in the heartbeat say the rest.
          if (this.#isStoreFailing) return;
          this.#isStoreFailing = true;
          this.#logger.log("warn", "limiter store call failed; failure policies decide", {
            error: describeError(error),
          });
        },
      });
      this.#seen =
        reporting.seenCustomers === false
          ? null
          : new SeenCustomers({ ...reporting.seenCustomers, wallClock });
    } catch (error: unknown) {
      this.#clients.decisions.off("error", this.#onDecisionsError);
      if (this.#ownsClients) for (const client of Object.values(this.#clients)) client.disconnect();
      throw asOptionsError(error);
    }

    this.#topology = new RedisTopologyWatcher({
      redis: this.#clients.control,
      names,
      enforcerId: this.enforcerId,
      sentinelName: redis.sentinel?.name ?? null,
      wallClock,
      logger: this.#logger,
    });
    this.#status = new StatusReporter({
      redis: this.#clients.control,
      names,
      enforcerId: this.enforcerId,
      report: () => ({
        applied: this.#follower.applied,
        snapshotErrors: this.#follower.errors,
        breaker: { snapshot: () => this.#engine.breakerSnapshot() },
        degradedByFailure: this.#engine.metrics.totals().degradedByFailure,
        slowStoreDecisions: this.#engine.slowStoreDecisionCount,
        eventLoopDelay: this.#loopDelay.last,
        redisTopology: this.#topology.current,
        redisFailoversSeen: this.#topology.failoversSeen,
        withoutPolicy: {
          action: controlPlane.withoutPolicy ?? "admit",
          decisions: this.#engine.metrics.totals().decisionsBySource["no-policy"],
        },
      }),
      ttlMs: reporting.heartbeatTtlMs ?? 10_000,
      wallClock,
      logger: this.#logger,
    });
    this.#flusher = new MetricsFlusher({
      redis: this.#clients.control,
      names,
      prefix: this.keyPrefix,
      enforcerId: this.enforcerId,
      metrics: this.#engine.metrics,
      recentRejections: this.#engine.recentRejections,
      secondBucketTtlMs: reporting.secondBucketTtlMs ?? 10_800_000,
      minuteBucketTtlMs: reporting.minuteBucketTtlMs ?? 21_600_000,
      rejectionsPerCustomer: reporting.rejectionsPerCustomer ?? 50,
      rejectionsTtlMs: reporting.rejectionsTtlMs ?? 3_600_000,
      logger: this.#logger,
    });
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
    const cache = controlPlane.policyCache;
    const follower = this.#follower;
    this.#policyCache =
      cache === undefined || this.#isPolicyInCode
        ? null
        : {
            path: cache.path,
            writer: new PolicyCacheWriter({
              path: cache.path,
              keyPrefix: this.keyPrefix,
              saveIntervalMs: cache.saveIntervalMs ?? 5_000,
              snapshot: () => follower.binarySnapshot(),
              sha256Bytes: nodeSha256Bytes,
              clock,
              wallClock,
              timers: this.#timers,
              logger: this.#logger,
            }),
          };
    const writer = this.#policyCache?.writer;
    if (writer !== undefined) {
      // Only versions applied from Redis are saved: the cached one is already on disk.
      this.#follower.onApplied((applied) => {
        if (applied.via !== "cache") writer.noteApplied();
      });
    }
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
    target: Pick<CreateRedisOptions, "url" | "clusterNodes" | "sentinel">,
    maxWaitMs: number,
  ): EnforcerClients {
    const connectionName = (role: string) => `limitplane-enforcer-${role}-${this.enforcerId}`;
    return {
      decisions: createRedisClient("decisions", {
        ...target,
        connectionName: connectionName("d"),
        // The client must not give up on a slow call before the enforcer does.
        commandTimeoutMs: maxWaitMs + 250,
      }),
      // Limits with durability "replicated" (WAIT blocks its connection; on a Cluster, the
      // connection to the slot's master, so a Cluster client of its own).
      replicated: createRedisClient("decisions", {
        ...target,
        connectionName: connectionName("r"),
        commandTimeoutMs: maxWaitMs + 250,
      }),
      control: createRedisClient("control", { ...target, connectionName: connectionName("c") }),
      subscriber: createRedisClient("subscriber", {
        ...target,
        connectionName: connectionName("s"),
      }),
    };
  }

  /**
   * Starts following the published policy (unless the limits are in code) and waits up to
   * `controlPlane.startupWaitMs` for a first snapshot, checks that Redis answers (one error line
   * if not), and starts the heartbeat and the metrics flush. Resolves whether a snapshot is in
   * force; throws a `RedisProtocolError` when Redis holds another protocol version's policy.
   */
  async start(): Promise<boolean> {
    let hasPolicy = true;
    if (this.#isPolicyInCode) {
      await this.#waitForRedis(Math.min(this.#startupWaitMs, 2_000));
    } else {
      const startedAtMs = this.#clock.nowMs();
      await this.#follower.start(Math.min(this.#startupWaitMs, 1_000));
      const leftMs = Math.max(0, this.#startupWaitMs - (this.#clock.nowMs() - startedAtMs));
      // Redis speaking another protocol version is a deployment mistake: said at once, not waited out.
      const protocolError = this.#follower.protocolError;
      if (protocolError !== null) throw protocolError;
      hasPolicy = await this.#follower.waitForSnapshot(leftMs);
      if (!hasPolicy && this.#policyCache !== null) hasPolicy = await this.#loadCachedPolicy();
      if (!hasPolicy) {
        this.#logger.log(
          "warn",
          "no policy snapshot yet: nothing is limited until the control plane publishes one under this key prefix (or pass the limits in code as `policy`)",
          {
            waitedMs: this.#startupWaitMs,
            keyPrefix: this.keyPrefix,
            policyHead: policyRedisNames(this.keyPrefix).head,
            redis: this.#redisUrl,
          },
        );
      }
    }
    this.#reportUnreachableRedis();
    this.#loopDelay.start();
    await this.#topology.refresh();
    await this.#status.beat();
    this.#loops.push(
      runEvery(this.#timers, this.#heartbeatIntervalMs, async () => {
        this.#noticeStoreRecovery();
        this.#loopDelay.rotate();
        await this.#topology.refresh();
        return this.#status.beat();
      }),
      runEvery(this.#timers, this.#metricsFlushIntervalMs, () =>
        Promise.all([this.#flusher.flush(), this.#seenReporter?.flush()]).then(() => undefined),
      ),
    );
    const globalShares = this.#globalShares;
    if (globalShares !== null) {
      // The shares in force from the first request when Redis answers; the floor until then.
      await globalShares.poll().catch(() => undefined);
      this.#loops.push(
        runEvery(this.#timers, this.#globalPollIntervalMs, () => globalShares.poll()),
      );
    }
    const recorder = this.recorder;
    if (recorder !== null)
      this.#loops.push(runEvery(this.#timers, recorder.flushIntervalMs, () => recorder.flush()));
    return hasPolicy;
  }

  /**
   * Puts the policy saved on disk in force (Redis gave none within the start-up wait). A refused
   * file is one error line naming the path and the problem; `withoutPolicy` then applies.
   */
  async #loadCachedPolicy(): Promise<boolean> {
    const cache = this.#policyCache;
    if (cache === null) return false;
    const read = await readPolicyCache(cache.path, this.keyPrefix, {
      customerCacheSize: this.#cacheSize,
      sha256Bytes: nodeSha256Bytes,
      sha256Hex: nodeSha256Hex,
    }).catch((error: unknown) => ({
      status: "refused" as const,
      problem: `cannot be read (${describeFileError(error)})`,
    }));
    switch (read.status) {
      case "missing":
        this.#logger.log("info", "no policy cached on disk yet", { path: cache.path });
        return this.#follower.current !== null;
      case "refused":
        this.#logger.log(
          "error",
          `cached policy refused: ${cache.path}: ${read.problem}; requests get withoutPolicy meanwhile`,
          { path: cache.path, problem: read.problem },
        );
        return this.#follower.current !== null;
      case "ok": {
        if (!this.#follower.adoptCached(read.state, read.savedAtMs)) return true;
        this.#logger.log(
          "warn",
          `Redis gave no policy within the start-up wait: enforcing the policy cached on disk until it does`,
          {
            path: cache.path,
            policy: describeAppliedPolicy(this.#follower.applied),
            version: read.state.version,
            savedAt: new Date(read.savedAtMs).toISOString(),
            redis: this.#redisUrl,
          },
        );
        return true;
      }
      default: {
        const unknown: never = read;
        throw new TypeError(`unknown cache read: ${JSON.stringify(unknown)}`);
      }
    }
  }

  /** Resolves once the decisions connection is ready, has failed, or `waitMs` has passed. */
  #waitForRedis(waitMs: number): Promise<void> {
    const client = this.#clients.decisions;
    if (client.status === "ready" || this.#lastRedisError !== null) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        timer.cancel();
        client.off("ready", done);
        client.off("error", done);
        resolve();
      };
      const timer = this.#timers.setTimer(done, waitMs);
      client.once("ready", done);
      client.once("error", done);
    });
  }

  /**
   * One error line when the decisions connection is not up at start: which Redis, and why. A
   * wrong URL must not pass for a working limiter; each limit's failure policy decides until
   * Redis answers, and an info line says when it does.
   */
  #reportUnreachableRedis(): void {
    const client = this.#clients.decisions;
    if (client.status === "ready") return;
    this.#logger.log(
      "error",
      "cannot reach Redis: until it answers, each limit's failure policy decides (fail-open limits admit everything)",
      {
        redis: this.#redisUrl ?? "(the decisions client given in redis.clients)",
        connection: client.status,
        error: this.#lastRedisError === null ? null : describeError(this.#lastRedisError),
      },
    );
    client.once("ready", this.#onRedisBack);
  }

  readonly #onRedisBack = () => {
    this.#logger.log("info", "Redis answering: limits are decided by the shared store again", {
      redis: this.#redisUrl ?? "(the decisions client given in redis.clients)",
    });
  };

  #noticeStoreRecovery(): void {
    if (!this.#isStoreFailing) return;
    const breaker = this.#engine.breakerSnapshot();
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

  /** The rejection flood's fast path: `DecisionEngine.rejectFromCache`, and the customer seen. */
  #rejectFromCache: CachedRejecter = (
    customerId,
    tier,
    method,
    path,
    endpointClass,
    cost,
    into,
  ) => {
    const wallNowMs = this.#wallClock.nowMs();
    const engine = this.#engine;
    if (
      !engine.rejectFromCache(customerId, tier, method, path, endpointClass, cost, wallNowMs, into)
    ) {
      return false;
    }
    this.#seen?.record(customerId, tier, wallNowMs);
    return true;
  };

  /** Which descriptors a descriptor rule matches. See `DecisionEngine.matchDescriptors`. */
  matchDescriptors(
    domain: string,
    descriptors: readonly (readonly DescriptorEntry[])[],
  ): readonly boolean[] {
    return this.#engine.matchDescriptors(domain, descriptors);
  }

  /**
   * Decides the descriptors of one rate-limit call against the policy's descriptor rules. See
   * `DecisionEngine.checkDescriptors`.
   */
  checkDescriptors(
    domain: string,
    descriptors: readonly (readonly DescriptorEntry[])[],
    cost: number,
  ): Promise<readonly DescriptorDecision[] | null> {
    return this.#engine.checkDescriptors(domain, descriptors, cost, this.#wallClock.nowMs());
  }

  /** The descriptor mapping of `domain` in force. See `DecisionEngine.descriptorMapping`. */
  descriptorMapping(domain: string): TDescriptorMapping | null {
    return this.#engine.descriptorMapping(domain);
  }

  /**
   * Decides one descriptor by the limit its gateway sent. See
   * `DecisionEngine.checkLimitOverride`.
   */
  checkLimitOverride(
    domain: string,
    entries: readonly DescriptorEntry[],
    limit: { readonly limit: number; readonly windowMs: number },
    cost: number,
  ): Promise<LimitOverrideDecision | null> {
    return this.#engine.checkLimitOverride(domain, entries, limit, cost, this.#wallClock.nowMs());
  }

  /**
   * Outbound budget `name` (scope `outbound:<name>`) in the policy in force, or null when it has
   * none: what `createOutboundLimiter({ policy: enforcer })` reads on every `acquire`, so a budget
   * changed in the console applies to the next call without a restart.
   */
  outboundBudget(name: string): TSnapshotOutboundBudget | null {
    return this.#follower.outboundBudget(name);
  }

  /** Calls `listener` after every policy snapshot applied. Returns the unsubscribe. */
  onPolicyApplied(listener: (applied: AppliedSnapshot) => void): () => void {
    return this.#follower.onApplied(listener);
  }

  /** Reads the stored policy now (as a poll would). Does nothing when the limits are in code. */
  refreshPolicy(): Promise<void> {
    if (this.#isPolicyInCode) return Promise.resolve();
    return this.#follower.refresh("poll");
  }

  /** What the leases did since start (all zero when leases are off or the store cannot lease). */
  leaseFigures(): LeaseFigures {
    return (
      this.#engine.leases?.figures() ?? {
        admitted: 0,
        grantedUnits: 0,
        returnedUnits: 0,
        expiredUnits: 0,
        returningUnits: 0,
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
      policyDescription: describeAppliedPolicy(this.#follower.applied),
      policySize: this.#follower.size,
      snapshotErrors: this.#follower.errors,
      breaker: this.#engine.breakerSnapshot(),
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
    const status = this.status();
    const delay = status.eventLoopDelay;
    const leases = this.leaseFigures();
    const only = (value: number): PrometheusSample[] => [{ value }];
    const families: PrometheusFamily[] = [
      {
        name: "decisions_without_store_total",
        type: "counter",
        help: "Decisions made without Redis, by why: store-error (down or refusing), timeout (no answer in time), circuit-open (the breaker answered). Each was decided by its limits' failure policies; 0 while Redis is healthy.",
        samples: STORE_FAILURES.map((failure) => ({
          labels: [["reason", failure]] as const,
          value: status.decisionsWithoutStore[failure],
        })),
      },
      {
        name: "store_slow_decisions_total",
        type: "counter",
        help: "Store decisions that came after the timeout and were waited for (Redis connected but slow, or this host busy) instead of decided without Redis.",
        samples: only(status.slowStoreDecisions),
      },
      {
        name: "event_loop_delay_seconds",
        type: "gauge",
        help: "This process's event-loop delay over the last heartbeat interval (monitorEventLoopDelay, beyond its 10 ms sampling interval): how late timers and I/O callbacks ran.",
        samples: (
          [
            ["0.5", delay.p50Ms],
            ["0.99", delay.p99Ms],
            ["1", delay.maxMs],
          ] as const
        ).map(([quantile, ms]) => ({
          labels: [["quantile", quantile]] as const,
          value: ms / 1000,
        })),
      },
      {
        name: "lease_units_total",
        type: "counter",
        help: "Units of cost leased from Redis for this gateway alone, by what became of them: granted; returned (not spent when the lease ended, given back to Redis); expired (not spent and not taken back: the window they came from was over, or Redis did not answer; the limit admitted that many fewer).",
        samples: (
          [
            ["granted", leases.grantedUnits],
            ["returned", leases.returnedUnits],
            ["expired", leases.expiredUnits],
          ] as const
        ).map(([state, value]) => ({ labels: [["state", state]] as const, value })),
      },
      {
        name: "policy_version",
        type: "gauge",
        help: "The policy snapshot version in force (0: none yet).",
        samples: only(status.policy?.version ?? 0),
      },
      {
        name: "policy_snapshot_errors_total",
        type: "counter",
        help: "Published snapshots refused as invalid.",
        samples: only(status.snapshotErrors.count),
      },
      {
        name: "circuit_open",
        type: "gauge",
        help: "Whether the store's circuit breaker is open (1) or not (0).",
        samples: only(status.breaker.state === "open" ? 1 : 0),
      },
    ];
    const options = { constantLabels: { enforcer: this.enforcerId } };
    return (
      renderPrometheus(this.metricsTotals(), options) + renderPrometheusFamilies(families, options)
    );
  }

  /**
   * Stops following the policy, flushes the metrics a last time, removes the heartbeat and closes
   * the Redis connections it opened (never `clients` that were passed in). Safe to call twice.
   */
  async stop(): Promise<void> {
    if (this.#isStopped) return;
    this.#isStopped = true;
    this.#clients.decisions.off("error", this.#onDecisionsError);
    this.#clients.decisions.off("ready", this.#onRedisBack);
    for (const loop of this.#loops) loop.cancel();
    this.#loops = [];
    this.#loopDelay.stop();
    // With limits in code the follower never subscribed: nothing to stop.
    if (!this.#isPolicyInCode) await this.#follower.stop();
    // The demand of global limits counted since the last poll reaches Redis.
    await this.#globalShares?.poll().catch(() => undefined);
    // The newest version applied reaches the disk before the process goes.
    await this.#policyCache?.writer.flush();
    // Leases end: their unspent units go back to Redis. Those returns and the refills held back
    // for company go now, ahead of the QUIT below, so they are answered.
    this.#engine.leases?.clear();
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

/** Node's SHA-256: the same digests as the portable one, several times faster on large policies. */
function nodeSha256Hex(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

function nodeSha256Bytes(bytes: Uint8Array): Uint8Array {
  return createHash("sha256").update(bytes).digest();
}

function delay(timers: Timers, ms: number): Promise<void> {
  return new Promise((resolve) => {
    timers.setTimer(resolve, ms);
  });
}

/**
 * Creates an enforcer and starts it (see {@link Enforcer.start}): ready to `check` when it
 * resolves, with the limits in code in force, or the published policy unless Redis gave none
 * within `controlPlane.startupWaitMs`. Throws {@link EnforcerOptionsError} for options it cannot
 * run with, and {@link RedisProtocolError} (its connections closed) when Redis holds the policy of
 * another protocol version than this release's; never because Redis is unreachable.
 */
export async function createEnforcer(options: EnforcerOptions): Promise<Enforcer> {
  const enforcer = new Enforcer(options);
  try {
    await enforcer.start();
  } catch (error: unknown) {
    await enforcer.stop();
    throw error;
  }
  return enforcer;
}

/**
 * A part refusing an option (a RangeError naming it, or an invalid bootstrap snapshot) as the
 * options error it is; anything else is a bug and propagates as it is.
 */
function asOptionsError(error: unknown): unknown {
  if (error instanceof EnforcerOptionsError) return error;
  if (error instanceof RangeError || error instanceof TypeError) {
    return new EnforcerOptionsError([{ path: [], message: error.message }], { cause: error });
  }
  return error;
}
