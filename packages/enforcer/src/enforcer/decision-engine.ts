/**
 * One request, decided: what the gateway knows is resolved against the snapshot in force into
 * layered checks, the optional local stage may reject at once, otherwise the shared store decides
 * every check (enforced and dry-run) in one call behind the timeout, breaker and failure policy;
 * the decision is counted and turned into the HTTP response parts.
 *
 * No Redis and no snapshot subscription here: the store and the snapshot are given, so this is
 * the part tests drive with a `MemoryStore` and a fixed snapshot. `Enforcer` wires it to Redis.
 */
import type { Clock } from "../limiter/clock";
import { wallClock as defaultWallClock, monotonicClock } from "../limiter/clock";
import { UNLIMITED } from "../limiter/layered";
import { systemTimers, type Timers } from "../limiter/timers";
import type { LimiterStore, LimitSpec } from "../limiter/types";
import {
  DENY_LIMIT,
  type DescriptorEntry,
  denyOutcomeOf,
  descriptorCheckOf,
  ruleDescriptors,
} from "../policy/descriptor-rules";
import type { TSnapshotDescriptorRuleEntry } from "../policy/entries";
import { isCustomerId } from "../policy/names";
import type { PreparedSnapshot } from "../policy/prepare";
import type { Resolution, ResolvedCheck } from "../policy/resolve";
import type { TDescriptorMapping } from "../policy/schemas";
import type { TSnapshotDescriptorRaise } from "../policy/schemas/descriptors";
import type { DecisionRecorder } from "../recording/traffic-recorder";
import type { CachedRejectionSink } from "./cached-rejection";
import {
  type BreakerSnapshot,
  CircuitBreaker,
  type CircuitBreakerOptions,
} from "./circuit-breaker";
import { DecisionMetrics, type DecisionMetricsOptions } from "./decision-metrics";
import { FailurePolicy } from "./failure-policy";
import type { GlobalBudgets } from "./global-budgets";
import { type GuardedLease, GuardedStore } from "./guarded-store";
import {
  buildRateLimitResponse,
  type RateLimitHttpResult,
  retryAfterSeconds,
} from "./http-headers";
import {
  type LeaseOptions,
  type LeaseRequest,
  type LeaseReturner,
  LeaseTable,
} from "./lease-table";
import { LocalStage, type LocalStageOptions } from "./local-stage";
import { RecentRejections, type RecentRejectionsOptions } from "./recent-rejections";
import { decimalDigitsOf, keptBodyText, RejectionResponses } from "./rejection-responses";
import { ResolutionCache, type ResolutionCacheOptions } from "./resolution-cache";
import {
  type EnforcerCheck,
  type EnforcerDecision,
  type EnforcerInput,
  type EnforcerOutcome,
  enforcerDecisionOf,
} from "./types";

/** What the gateway knows about a request. */
export interface EnforcerRequest {
  /** The authenticated customer (API key owner); absent or null before authentication. */
  readonly customerId?: string | null;
  /** The customer's tier; absent, null or unknown means the policy's default tier. */
  readonly tier?: string | null;
  /** HTTP method. */
  readonly method: string;
  /** Request target (path, optionally with a query, which is ignored). */
  readonly path: string;
  /** The client's IP address; keys anonymous traffic. Absent: keyed as `unknown`. */
  readonly clientAddress?: string | null;
  /** The endpoint class, when the gateway knows it; otherwise it is matched by method and path. */
  readonly endpointClass?: string | null;
  /**
   * Units of cost this request spends, overriding the endpoint class's cost (a batch endpoint
   * charging per item, say). A whole or fractional number >= 0.
   * @default the endpoint class's cost
   */
  readonly cost?: number;
}

/** The decision and everything the caller needs to answer with it. */
export interface EnforcerResult {
  readonly decision: EnforcerDecision;
  /**
   * The HTTP response parts (`buildRateLimitResponse`): headers for every response; status 429
   * and the JSON body for a rejection (status and body null on admission).
   */
  readonly http: RateLimitHttpResult;
  /** Whose buckets were used (`c:<customer>`, `a:<address>`, ...); null without a policy. */
  readonly subject: string | null;
  /** The endpoint class the request was resolved to; null without a policy. */
  readonly endpointClass: string | null;
  /** The cost spent (or that would have been, for a rejection). */
  readonly cost: number;
  /** The limits checked, enforced and dry-run, in order. */
  readonly checks: readonly ResolvedCheck[];
  /** The policy version that decided; null without a policy. */
  readonly policyVersion: number | null;
}

/**
 * What one descriptor of a rate-limit call came to under the policy's descriptor rules
 * (`descriptor-rules.ts`):
 * - `unmatched`: no rule (or only one turned `off`) matches it; the caller may decide it otherwise.
 * - `replaced`: its rule is replaced by another rule the same call matched; nothing counted.
 * - `unlimited`: its rule is unlimited; admitted, nothing counted.
 * - `decided`: its rule's limit was checked, in one store call, on the rule's counter.
 */
export type DescriptorDecision =
  | { readonly kind: "unmatched" }
  | { readonly kind: "replaced"; readonly rule: TSnapshotDescriptorRuleEntry }
  | { readonly kind: "unlimited"; readonly rule: TSnapshotDescriptorRuleEntry }
  | {
      readonly kind: "decided";
      readonly rule: TSnapshotDescriptorRuleEntry;
      /** The counter's subject (domain and values). */
      readonly subject: string;
      /** The pattern as matched, values included when the rule asks for detailed metrics. */
      readonly metricKey: string;
      readonly check: EnforcerCheck;
      readonly decision: EnforcerDecision;
      readonly http: RateLimitHttpResult;
    };

/** A descriptor decided by the limit its gateway sent (`DecisionEngine.checkLimitOverride`). */
export interface LimitOverrideDecision {
  /** The counter's subject: the domain and the descriptor's entries. */
  readonly subject: string;
  readonly check: EnforcerCheck;
  readonly decision: EnforcerDecision;
  readonly http: RateLimitHttpResult;
}

/**
 * A `deny` rule's decision, made here: every request is over (a would-reject in dry-run),
 * `cost-exceeds-capacity` since waiting never helps. Counted like any decision, source `rule`.
 */
function denyDecisionOf(check: EnforcerCheck): EnforcerDecision {
  const outcome: EnforcerOutcome = { ...denyOutcomeOf(check), fallback: null };
  return enforcerDecisionOf([outcome], { source: "rule", degraded: false, failure: null });
}

/** Anything that decides requests: the adapters depend on this, not on `Enforcer`. */
export interface RequestChecker {
  check(request: EnforcerRequest): Promise<EnforcerResult>;
  /**
   * `check`, but answering at once, without a promise, whenever the decision needs no store call
   * (a lease, the denial cache, the flood guard: most requests under load); a promise otherwise.
   * An adapter that can go on synchronously saves the promise's turns. Throws where `check`
   * rejects.
   */
  checkNow?(request: EnforcerRequest): EnforcerResult | Promise<EnforcerResult>;
}

export interface DecisionEngineOptions {
  /** The shared store: the Redis store in production, a `MemoryStore` in tests. */
  readonly store: LimiterStore;
  /** The snapshot in force, or null when there is none yet. Read once per request. */
  readonly snapshot: () => PreparedSnapshot | null;
  /**
   * How many gateways share the traffic; divides every `local` limit while the store is down. No
   * default: any guess is wrong by a factor.
   */
  readonly expectedGateways: number;
  /**
   * How long a store call may go unanswered before the store's reachability is looked at: an
   * unreachable store is decided without at once, a reachable one is waited for (see
   * `maxWaitMs`).
   * @default 50
   */
  readonly timeoutMs?: number;
  /**
   * The longest a decision waits for a reachable but slow store, in all, before its failure
   * policy answers. A busy gateway serves slower; it never serves unlimited.
   * @default 1_000
   */
  readonly maxWaitMs?: number;
  /** Whether the store can be asked now (the Redis connection is up). @default () => true */
  readonly isStoreReachable?: () => boolean;
  /** @default the CircuitBreaker defaults (5 failures, 2 s cool-down) */
  readonly breaker?: Omit<CircuitBreakerOptions, "clock">;
  /** Least `Retry-After` a `closed` limit tells while the store is down. @default 1_000 */
  readonly closedRetryAfterMs?: number;
  /**
   * What a request gets while there is no snapshot: admitted unchecked, or refused as the
   * limiter being unavailable (503, scope `no-policy`, retry after 1 s).
   * @default "admit"
   */
  readonly withoutPolicy?: "admit" | "reject";
  /**
   * The local first stage (denial cache + flood guard at 2x), or false to go to the store for
   * every request. It only ever rejects, so it never admits more than the shared limit; a request
   * it rejects does not reach the store, so its dry-run limits are not evaluated.
   * @default {}
   */
  readonly localStage?: LocalStageOptions | false;
  /**
   * Leases (`lease-table.ts`): slices of a busy subject's budget the store reserves for this
   * gateway, spent here without a store call, exactly. Only with a store that leases (the Redis
   * store), or false.
   * @default {}
   */
  readonly leases?: Omit<LeaseOptions, "clock" | "timers" | "returner" | "keepsStoreTime"> | false;
  /** @default {} */
  readonly metrics?: Omit<DecisionMetricsOptions, "wallClock">;
  /**
   * The memo of resolutions of customers without overrides, per snapshot (see
   * `resolution-cache.ts`).
   * @default {}: at most 10 000 resolutions
   */
  readonly resolutionCache?: ResolutionCacheOptions;
  /** @default {} */
  readonly recentRejections?: Omit<RecentRejectionsOptions, "clock" | "wallClock">;
  /** Durations (timeouts, breaker, local quotas, latency). @default monotonicClock */
  readonly clock?: Clock;
  /** Incident expiry, metrics buckets, rejection times. @default Date.now */
  readonly wallClock?: Clock;
  /** @default systemTimers */
  readonly timers?: Timers;
  /** Told about each store error (not timeouts), after the decision is made. */
  readonly onStoreError?: (error: unknown) => void;
  /** The traffic record: told every decision made under a policy, synchronously. @default none */
  readonly recorder?: DecisionRecorder;
  /**
   * The region's shares of the policy's global limits (`global-budgets.ts`): a global limit is
   * decided at its share, its demand counted, and never leased. @default none: whole limits
   */
  readonly globalBudgets?: GlobalBudgets;
}

const NO_CHECKS: readonly ResolvedCheck[] = [];
/** How soon a request refused for want of a policy is told to retry. */
const NO_POLICY_RETRY_AFTER_MS = 1_000;

function assertCustomerId(customerId: string): void {
  if (!isCustomerId(customerId)) {
    throw new TypeError(`customerId ${JSON.stringify(customerId)} is not a valid customer id`);
  }
}

export class DecisionEngine implements RequestChecker {
  readonly metrics: DecisionMetrics;
  readonly recentRejections: RecentRejections;
  readonly breaker: CircuitBreaker;
  readonly #snapshot: () => PreparedSnapshot | null;
  readonly #withoutPolicyAction: "admit" | "reject";
  readonly #guarded: GuardedStore;
  /**
   * Every server's breaker as one, for the heartbeat and the log: the worst state (open, then
   * half-open), the failures and open counts summed. A Cluster has one breaker per master.
   */
  breakerSnapshot(): BreakerSnapshot {
    const rank = { closed: 0, "half-open": 1, open: 2 } as const;
    let worst: BreakerSnapshot | null = null;
    let consecutiveFailures = 0;
    let callsInWindow = 0;
    let failuresInWindow = 0;
    let openCount = 0;
    for (const breaker of this.#guarded.nodeBreakers().values()) {
      const one = breaker.snapshot();
      consecutiveFailures += one.consecutiveFailures;
      callsInWindow += one.callsInWindow;
      failuresInWindow += one.failuresInWindow;
      openCount += one.openCount;
      if (worst === null || rank[one.state] > rank[worst.state]) worst = one;
    }
    return {
      state: worst?.state ?? "closed",
      coolDownRemainingMs: worst?.coolDownRemainingMs ?? 0,
      consecutiveFailures,
      callsInWindow,
      failuresInWindow,
      openCount,
    };
  }

  /** Each server's breaker state: "" for a single Redis, `host:port` per Cluster master. */
  nodeBreakerStates(): Record<string, BreakerSnapshot["state"]> {
    const states: Record<string, BreakerSnapshot["state"]> = {};
    for (const [node, breaker] of this.#guarded.nodeBreakers()) states[node] = breaker.state;
    return states;
  }
  /** Store decisions that took longer than `timeoutMs` and were waited for. */
  get slowStoreDecisionCount(): number {
    return this.#guarded.slowDecisionCount;
  }
  readonly #localStage: LocalStage | null;
  /** Leases held, when the store leases and they are not turned off. */
  readonly leases: LeaseTable | null;
  /** The policy version the leases were granted under. */
  #leaseVersion: number | null = null;
  readonly #refiller = {
    refill: (input: EnforcerInput, lease: LeaseRequest) => this.#refill(input, lease),
  };
  /** Gives leases' unspent units back to the store (a call nobody waits on). */
  readonly #returner: LeaseReturner = {
    giveBack: (input, lease, settled) => {
      this.#guarded.returnLease(input, lease).then(settled);
    },
  };
  readonly #clock: Clock;
  readonly #wallClock: Clock;
  readonly #recorder: DecisionRecorder | undefined;
  readonly #resolutions: ResolutionCache;
  /** 429s made once per limit and retry-after second; emptied when the snapshot changes. */
  readonly #rejections = new RejectionResponses();
  /** The snapshot `#rejections` was made under. */
  #rejectionsSnapshot: PreparedSnapshot | null = null;
  /**
   * Descriptor rules' check lists, one per rule and per raise of a snapshot (whose entries are
   * new objects each version): leases are kept per check list object.
   */
  readonly #descriptorChecks = new WeakMap<object, readonly EnforcerCheck[]>();

  readonly #globalBudgets: GlobalBudgets | null;

  constructor(options: DecisionEngineOptions) {
    this.#globalBudgets = options.globalBudgets ?? null;
    this.#resolutions = new ResolutionCache(options.resolutionCache);
    this.#recorder = options.recorder;
    this.#clock = options.clock ?? monotonicClock;
    this.#wallClock = options.wallClock ?? defaultWallClock;
    this.#snapshot = options.snapshot;
    this.#withoutPolicyAction = options.withoutPolicy ?? "admit";
    this.breaker = new CircuitBreaker({ ...options.breaker, clock: this.#clock });
    this.#guarded = new GuardedStore({
      store: options.store,
      failurePolicy: new FailurePolicy({
        expectedGateways: options.expectedGateways,
        closedRetryAfterMs: options.closedRetryAfterMs,
        clock: this.#clock,
      }),
      timeoutMs: options.timeoutMs,
      maxWaitMs: options.maxWaitMs,
      isStoreReachable: options.isStoreReachable,
      breaker: this.breaker,
      newBreaker: () => new CircuitBreaker({ ...options.breaker, clock: this.#clock }),
      timers: options.timers ?? systemTimers,
      clock: this.#clock,
      onStoreError: options.onStoreError,
    });
    this.#localStage =
      options.localStage === false
        ? null
        : new LocalStage({ clock: this.#clock, ...options.localStage });
    this.leases =
      options.leases === false || options.store.decideLeasing === undefined
        ? null
        : new LeaseTable({
            ...options.leases,
            clock: this.#clock,
            timers: options.timers ?? systemTimers,
            returner: this.#returner,
            keepsStoreTime: options.recorder !== undefined,
          });
    this.metrics = new DecisionMetrics({ ...options.metrics, wallClock: this.#wallClock });
    this.recentRejections = new RecentRejections({
      ...options.recentRejections,
      clock: this.#clock,
      wallClock: this.#wallClock,
    });
  }

  /**
   * Decides `request`. Never rejects for a store failure (the failure policy answers); rejects
   * with a TypeError for a mistake of the calling code: a customer id outside the id character
   * set (`CUSTOMER_ID_PATTERN`), or a cost that is not a finite number >= 0.
   */
  async check(request: EnforcerRequest): Promise<EnforcerResult> {
    return this.checkNow(request);
  }

  /**
   * {@link check}, answered at once when no store call is needed (see
   * `RequestChecker.checkNow`); throws where `check` rejects. `wallNowMs` is the wall clock's
   * reading for this request, when the caller has read it already.
   *
   * Each clock is read once per request: the monotonic one when it starts (what the denial
   * cache, the leases and the flood guard use, and the instant a store call is sent), the wall
   * clock for its time bucket and its record. A decision made without a store call counts as
   * taking 0 us (it takes about one; the latency histogram's first bucket is 50 us).
   */
  checkNow(
    request: EnforcerRequest,
    wallNowMs = this.#wallClock.nowMs(),
  ): EnforcerResult | Promise<EnforcerResult> {
    const startedAtMs = this.#clock.nowMs();
    if (request.cost !== undefined && !(request.cost >= 0 && Number.isFinite(request.cost))) {
      throw new TypeError(`cost must be a finite number >= 0, got ${request.cost}`);
    }
    const customerId = request.customerId ?? null;
    const prepared = this.#snapshot();
    if (prepared === null) {
      if (customerId !== null) assertCustomerId(customerId);
      return this.#withoutPolicy(request, startedAtMs, wallNowMs);
    }
    const tier = request.tier ?? null;
    const endpointClass = request.endpointClass ?? null;
    // A resolution cached for this customer was made for a valid id: the id is checked only
    // when there is none. Looked up field by field: a hit makes no request object.
    let resolution =
      customerId === null
        ? undefined
        : this.#resolutions.cachedFor(
            prepared,
            customerId,
            tier,
            request.method,
            request.path,
            endpointClass,
          );
    if (resolution === undefined) {
      if (customerId !== null) assertCustomerId(customerId);
      const resolveRequest = {
        customerId,
        tier,
        method: request.method,
        path: request.path,
        clientAddress: request.clientAddress ?? null,
        endpointClass,
      };
      resolution = this.#resolutions.resolveAndKeep(prepared, resolveRequest, wallNowMs);
    }
    const cost = request.cost ?? resolution.cost;
    // Global limits at the region's share (the resolution itself when it has none).
    if (this.#globalBudgets !== null) {
      resolution = this.#globalBudgets.apply(resolution, cost, startedAtMs);
    }

    // In order: a cached denial (the cheapest answer, and the common one when a client is over
    // its limit), a lease, the flood guard, the shared store. `startedAtMs` serves as the instant
    // the store call is sent: it is read before it, which is all the denial cache and the leases
    // need (an earlier instant only makes a denial or a lease end sooner).
    const localStage = this.#localStage;
    const denied =
      localStage?.denialCache?.findFor(resolution.subject, resolution.checks, cost, startedAtMs) ??
      null;
    if (denied !== null) {
      return this.#answer(request, prepared, resolution, cost, denied, 0, wallNowMs);
    }
    const input: EnforcerInput = { subject: resolution.subject, checks: resolution.checks, cost };
    const decision = this.#decideLocally(input, prepared, startedAtMs);
    if (decision !== null) {
      return this.#answer(request, prepared, resolution, cost, decision, 0, wallNowMs);
    }
    return this.#decideSharedNow(input, startedAtMs).then((decided) => {
      const latencyMicros = (this.#clock.nowMs() - startedAtMs) * 1000;
      return this.#answer(request, prepared, resolution, cost, decided, latencyMicros, wallNowMs);
    });
  }

  /**
   * The rejection flood's fast path (see `cached-rejection.ts`): when a single live cached
   * denial rejects an identified customer's request, whose resolution and 429 are both kept,
   * counts and records the rejection exactly as {@link checkNow} would (metrics, recent
   * rejections), puts the kept 429 in `into` and answers true. False when anything else applies,
   * and then nothing was counted: no policy yet or a new one, an uncached resolution, no denial or
   * several, a cost `checkNow` would refuse, a traffic recorder (it records whole decisions), or
   * no 429 kept yet for these bytes (`checkNow` makes and keeps it).
   */
  rejectFromCache(
    customerId: string,
    tier: string | null,
    method: string,
    path: string,
    endpointClass: string | null,
    cost: number | undefined,
    wallNowMs: number,
    into: CachedRejectionSink,
  ): boolean {
    const denials = this.#localStage?.denialCache;
    if (denials === null || denials === undefined || this.#recorder !== undefined) return false;
    if (cost !== undefined && !(cost >= 0 && Number.isFinite(cost))) return false;
    const prepared = this.#snapshot();
    // Kept 429s belong to the snapshot they were made under; a new one goes the long way first.
    if (prepared === null || prepared !== this.#rejectionsSnapshot) return false;
    const resolution = this.#resolutions.cachedFor(
      prepared,
      customerId,
      tier,
      method,
      path,
      endpointClass,
    );
    if (resolution === undefined) return false;
    // A global limit's demand is counted and its share applied on the long way.
    if (this.#globalBudgets?.hasGlobal(resolution) === true) return false;
    const startedAtMs = this.#clock.nowMs();
    const denial = denials.soleDenialFor(
      resolution.subject,
      resolution.checks,
      cost ?? resolution.cost,
      startedAtMs,
    );
    if (denial === null) return false;
    // The outcome the denial cache's decision carries (`deniedOutcomeOf`), number for number.
    const retryAfterMs = Math.ceil(denial.expiresAtMs - startedAtMs);
    const resetAfterMs = Math.max(retryAfterMs, Math.ceil(denial.resetAtMs - startedAtMs));
    const kept = this.#rejections.keptFor(
      resolution.checks,
      denial.scope,
      denial.limit,
      denial.remaining,
      retryAfterMs,
      retryAfterSeconds(resetAfterMs),
      true,
      decimalDigitsOf(retryAfterMs),
    );
    if (kept === undefined) return false;
    this.metrics.record(denial.metrics, 0, wallNowMs);
    this.recentRejections.record(customerId, denial.scope, resolution.endpointClass, wallNowMs);
    into.rawHeaders = kept.rawHeaders;
    into.bodyText = keptBodyText(kept, retryAfterMs);
    return true;
  }

  /**
   * A lease's units or the flood guard's rejection for `input`, without a store call; null when
   * neither answers. Leases granted under an earlier snapshot are retired first.
   */
  #decideLocally(
    input: EnforcerInput,
    prepared: PreparedSnapshot,
    startedAtMs: number,
  ): EnforcerDecision | null {
    const leases = this.leases;
    let decision: EnforcerDecision | null = null;
    if (leases !== null) {
      if (prepared.version !== this.#leaseVersion) {
        leases.clear();
        this.#leaseVersion = prepared.version;
      }
      // Global limits are never leased (global-budgets.ts).
      if (this.#globalBudgets?.isGlobal(input.checks) !== true) {
        decision = leases.take(input, this.#refiller, true, startedAtMs);
      }
    }
    return decision ?? this.#localStage?.floodGuard?.check(input) ?? null;
  }

  /** The shared store's decision for `input` (a lease asked for with it), remembered locally. */
  async #decideSharedNow(input: EnforcerInput, startedAtMs: number): Promise<EnforcerDecision> {
    const shared = await this.#decideShared(input, startedAtMs);
    const decided = this.#fromLeaseInstead(input, shared);
    // A rejection a lease paid for instead is not cached: the lease's units come first.
    if (decided === shared) this.#localStage?.recordSharedDecision(input, shared, startedAtMs);
    return decided;
  }

  /**
   * Which of `descriptors` a descriptor rule of the policy in force matches (a rule turned `off`
   * matches nothing), without deciding or counting anything.
   */
  matchDescriptors(
    domain: string,
    descriptors: readonly (readonly DescriptorEntry[])[],
  ): readonly boolean[] {
    const index = this.#snapshot()?.descriptorRules;
    return descriptors.map((entries) => {
      const match = index?.match(domain, entries) ?? null;
      return match !== null && match.rule.mode !== "off";
    });
  }

  /**
   * Decides the descriptors of one rate-limit call (Envoy's RLS) against the policy's descriptor
   * rules: each descriptor is matched (`descriptor-rules.ts`), `replaces` is applied across the
   * call, and each remaining rule with a limit is decided on its own counter, under its scope
   * `descriptor:<id>`, by the raise of the matched value in force at `wallNowMs` if any, as a
   * gateway's request is: a cached denial, a lease, the flood guard, else one store call behind
   * the timeout, breaker and failure policy. A `deny` is answered here, without the store. Every
   * decision is counted. Null without a policy. `cost` is spent on every enforced rule.
   */
  async checkDescriptors(
    domain: string,
    descriptors: readonly (readonly DescriptorEntry[])[],
    cost: number,
    wallNowMs = this.#wallClock.nowMs(),
  ): Promise<readonly DescriptorDecision[] | null> {
    if (!(cost >= 0 && Number.isFinite(cost))) {
      throw new TypeError(`cost must be a finite number >= 0, got ${cost}`);
    }
    const prepared = this.#snapshot();
    if (prepared === null) return null;
    const rulings = ruleDescriptors(prepared.descriptorRules, domain, descriptors, wallNowMs);
    if (prepared !== this.#rejectionsSnapshot) {
      this.#rejections.clear();
      this.#rejectionsSnapshot = prepared;
    }
    return Promise.all(
      rulings.map(async (ruling): Promise<DescriptorDecision> => {
        if (ruling.kind === "unmatched") return ruling;
        const { match } = ruling;
        if (ruling.kind === "replaced") return { kind: "replaced", rule: match.rule };
        if (ruling.kind === "unlimited") return { kind: "unlimited", rule: match.rule };
        const { raise, limit } = ruling;
        const checks = this.#descriptorChecksOf(match.rule, raise, limit);
        const startedAtMs = this.#clock.nowMs();
        const decision = await this.#decideDescriptor(
          { subject: match.subject, checks, cost },
          limit === "deny",
          prepared,
          startedAtMs,
        );
        const [check] = checks as [EnforcerCheck];
        const latencyMicros =
          decision.source === "store" || decision.source === "fallback"
            ? (this.#clock.nowMs() - startedAtMs) * 1000
            : 0;
        this.metrics.record(decision, latencyMicros, wallNowMs);
        return {
          kind: "decided",
          rule: match.rule,
          subject: match.subject,
          metricKey: match.metricKey,
          check,
          decision,
          http: this.#rejections.responseFor(decision, checks),
        };
      }),
    );
  }

  /**
   * The descriptor mapping of `domain` in the policy in force (its own, else `*`), or null when
   * none covers it or there is no policy. A policy without mappings maps every domain with the
   * default entry keys (`descriptor-mappings.ts`).
   */
  descriptorMapping(domain: string): TDescriptorMapping | null {
    const mappings = this.#snapshot()?.descriptorMappings;
    if (mappings === undefined) return null;
    return mappings.get(domain) ?? mappings.get("*") ?? null;
  }

  /**
   * Decides one descriptor by the limit the gateway sent with it (Envoy's `RateLimitOverride`)
   * instead of the policy's, as envoyproxy/ratelimit does: a fixed window of `limit` per
   * `windowMs` (0: refuse all), on a counter of the domain and every entry of the descriptor, one
   * per window length. Only the caller knows whether the policy allows it (the domain's mapping). Fails
   * open when the store cannot be asked, as a descriptor rule does by default. Null without a
   * policy.
   */
  async checkLimitOverride(
    domain: string,
    entries: readonly DescriptorEntry[],
    limit: { readonly limit: number; readonly windowMs: number },
    cost: number,
    wallNowMs = this.#wallClock.nowMs(),
  ): Promise<LimitOverrideDecision | null> {
    if (this.#snapshot() === null) return null;
    const scope = `descriptor-limit:${limit.windowMs}ms`;
    // A limit of 0 refuses everything (envoyproxy/ratelimit's `requests_per_unit: 0`), as a
    // `deny` rule does.
    const isDeny = limit.limit === 0;
    const check: EnforcerCheck = {
      scope,
      bucket: scope,
      limit: isDeny
        ? DENY_LIMIT
        : { algorithm: "fixed-window", limit: limit.limit, windowMs: limit.windowMs },
      mode: "enforce",
      onStoreFailure: "open",
    };
    const values = entries.flatMap((entry) => [entry.key, entry.value]);
    const subject = `d:${JSON.stringify([domain, ...values])}`;
    const startedAtMs = this.#clock.nowMs();
    const checks = [check];
    // A limit of 0 is answered here, as a `deny` rule is: no store call.
    const decision = isDeny
      ? denyDecisionOf(check)
      : await this.#guarded.decide({ subject, checks, cost });
    this.metrics.record(decision, (this.#clock.nowMs() - startedAtMs) * 1000, wallNowMs);
    return { subject, check, decision, http: this.#rejections.responseFor(decision, checks) };
  }

  /** The one-check list of `rule` with `limit`, made once per rule or raise of a snapshot. */
  #descriptorChecksOf(
    rule: TSnapshotDescriptorRuleEntry,
    raise: TSnapshotDescriptorRaise | null,
    limit: LimitSpec | "deny",
  ): readonly EnforcerCheck[] {
    const owner = raise ?? rule;
    let checks = this.#descriptorChecks.get(owner);
    if (checks === undefined) {
      checks = [descriptorCheckOf(rule, limit)];
      this.#descriptorChecks.set(owner, checks);
    }
    return checks;
  }

  /** A descriptor rule's decision: `deny` here, else as {@link checkNow} decides a request. */
  #decideDescriptor(
    input: EnforcerInput & { readonly cost: number },
    isDeny: boolean,
    prepared: PreparedSnapshot,
    startedAtMs: number,
  ): EnforcerDecision | Promise<EnforcerDecision> {
    const [check] = input.checks as [EnforcerCheck];
    if (isDeny) return denyDecisionOf(check);
    const denied =
      this.#localStage?.denialCache?.findFor(
        input.subject,
        input.checks,
        input.cost,
        startedAtMs,
      ) ?? null;
    return (
      denied ??
      this.#decideLocally(input, prepared, startedAtMs) ??
      this.#decideSharedNow(input, startedAtMs)
    );
  }

  /** Counts and records `decision`, and makes the result the caller answers with. */
  #answer(
    request: EnforcerRequest,
    prepared: PreparedSnapshot,
    resolution: Resolution,
    cost: number,
    decision: EnforcerDecision,
    latencyMicros: number,
    wallNowMs: number,
  ): EnforcerResult {
    this.metrics.record(decision, latencyMicros, wallNowMs);
    const customerId = request.customerId ?? null;
    if (!decision.allowed && decision.scope !== null) {
      if (customerId !== null) {
        this.recentRejections.record(
          customerId,
          decision.scope,
          resolution.endpointClass,
          wallNowMs,
        );
      } else {
        this.recentRejections.recordAnonymous(decision.scope, wallNowMs);
      }
    }
    this.#recorder?.record({
      subject: resolution.subject,
      tier: request.tier ?? null,
      endpointClass: resolution.endpointClass,
      cost,
      policyVersion: prepared.version,
      checks: resolution.checks,
      decision,
      wallTimeMs: wallNowMs,
    });
    if (prepared !== this.#rejectionsSnapshot) {
      this.#rejections.clear();
      this.#rejectionsSnapshot = prepared;
    }
    return {
      decision,
      http: this.#rejections.responseFor(decision, resolution.checks),
      subject: resolution.subject,
      endpointClass: resolution.endpointClass,
      cost,
      checks: resolution.checks,
      policyVersion: prepared.version,
    };
  }

  /** The shared store's decision (or the failure policy's), with a lease when one is wanted. */
  async #decideShared(input: EnforcerInput, sentAtMs: number): Promise<EnforcerDecision> {
    const wanted =
      this.#globalBudgets?.isGlobal(input.checks) === true ? undefined : this.leases?.want(input);
    if (wanted === undefined || wanted.units === 0) return this.#guarded.decide(input);
    const answer = await this.#guarded.decideLeasing(input, wanted);
    this.#settleLease(input, answer, sentAtMs);
    return answer.decision;
  }

  /** Tells the lease table what became of a lease it asked for: granted, or not answered. */
  #settleLease(input: EnforcerInput, answer: GuardedLease, sentAtMs: number): void {
    if (answer.decision.source === "store") {
      this.leases?.granted(input, answer, sentAtMs);
    } else {
      this.leases?.refillFailed(input);
    }
  }

  /**
   * A store rejection of a request sent before this gateway's lease of the same checks arrived
   * (a burst): the lease pays for it instead, exactly as if the request had come a moment later.
   * Otherwise the lease's units could end unspent while the requests that wanted them were
   * rejected.
   */
  #fromLeaseInstead(input: EnforcerInput, decision: EnforcerDecision): EnforcerDecision {
    if (decision.allowed || decision.source !== "store" || this.leases === null) return decision;
    return this.leases.take(input, this.#refiller, false) ?? decision;
  }

  /**
   * More units for a busy lease, asked for before it runs out: a store call of cost 0 (it
   * admits nothing) that only leases. Its answer is not a request's decision, so it is not
   * counted as one. The store may hold it back for a moment (`lease.maxDelayMs`) to send it with
   * others; the lifetime still runs from `sentAtMs`, read before the call is made.
   */
  #refill(input: EnforcerInput, lease: LeaseRequest): void {
    const sentAtMs = this.#clock.nowMs();
    const refill: EnforcerInput = { subject: input.subject, checks: input.checks, cost: 0 };
    this.#guarded.decideLeasing(refill, lease).then(
      (answer) => this.#settleLease(refill, answer, sentAtMs),
      () => this.leases?.refillFailed(refill),
    );
  }

  /**
   * No snapshot yet: there is no limit to check, so the request is admitted (or, when the
   * embedder chose `reject`, refused as the limiter being unavailable) and counted.
   */
  #withoutPolicy(request: EnforcerRequest, startedAtMs: number, wallNowMs: number): EnforcerResult {
    const isRejected = this.#withoutPolicyAction === "reject";
    const decision: EnforcerDecision = {
      allowed: !isRejected,
      limit: UNLIMITED,
      remaining: isRejected ? 0 : UNLIMITED,
      retryAfterMs: isRejected ? NO_POLICY_RETRY_AFTER_MS : 0,
      resetAfterMs: isRejected ? NO_POLICY_RETRY_AFTER_MS : 0,
      reason: isRejected ? "store-unavailable" : null,
      scope: isRejected ? "no-policy" : null,
      outcomes: [],
      source: "no-policy",
      degraded: false,
      failure: null,
    };
    this.metrics.record(decision, (this.#clock.nowMs() - startedAtMs) * 1000, wallNowMs);
    return {
      decision,
      http: buildRateLimitResponse(decision, NO_CHECKS),
      subject: null,
      endpointClass: null,
      cost: request.cost ?? 0,
      checks: NO_CHECKS,
      policyVersion: null,
    };
  }
}
