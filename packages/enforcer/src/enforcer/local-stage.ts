/**
 * The optional first stage, in front of the shared store (the seed's section 9: "a cheap local
 * limiter in front of an exact shared one"). Two parts, both of which only ever REJECT: anything
 * they let through still goes to the shared store, which alone admits. So the local stage can
 * never let more through than the shared limit.
 *
 * - {@link DenialCache}: after the shared store rejects a subject on a limit, later requests that
 *   would hit the same limit are rejected locally until the shared limit could admit them again.
 * - {@link FloodGuard}: a generous in-process limiter (by default twice each enforced limit) that
 *   sheds obvious floods with no network call.
 */
import type { Clock } from "../limiter/clock";
import { monotonicClock } from "../limiter/clock";
import { bucketOf } from "../limiter/layered";
import { MemoryStore } from "../limiter/stores/memory";
import type { LimitCheck, LimitSpec } from "../limiter/types";
import { limitSize, scaleLimit } from "../policy/limit-math";
import type { MetricsDecision } from "./decision-metrics";
import { BoundedLru } from "./lru";
import {
  type EnforcerCheck,
  type EnforcerDecision,
  type EnforcerInput,
  type EnforcerOutcome,
  enforcerDecisionOf,
} from "./types";

/** A stable spelling of a limit's parameters, so a cached denial is tied to the exact limit. */
const limitKeys = new WeakMap<LimitSpec, string>();

function limitKeyOf(spec: LimitSpec): string {
  const cached = limitKeys.get(spec);
  if (cached !== undefined) return cached;
  let key: string;
  switch (spec.algorithm) {
    case "fixed-window":
    case "sliding-log":
    case "sliding-window":
      key = `${spec.algorithm}:${spec.limit}:${spec.windowMs}`;
      break;
    case "token-bucket":
      key = `token-bucket:${spec.capacity}:${spec.refillPerSec}`;
      break;
    case "leaky-meter":
      key = `leaky-meter:${spec.burst}:${spec.drainPerSec}`;
      break;
    default: {
      const unknown: never = spec;
      throw new TypeError(`unknown limit: ${JSON.stringify(unknown)}`);
    }
  }
  limitKeys.set(spec, key);
  return key;
}

/**
 * The identity of a cached denial: subject, bucket and the limit's exact parameters, each
 * length-prefixed so no two different triples spell the same key. (The cache holds the subject
 * and the check's part apart, so a lookup joins nothing.)
 */
export function denialKeyOf(subject: string, check: LimitCheck): string {
  return `${subject.length}:${subject}${checkKeyOf(check)}`;
}

/** The check's part of a denial key, made once per check object (the policy's are frozen). */
const checkKeys = new WeakMap<LimitCheck, string>();

function checkKeyOf(check: LimitCheck): string {
  if (Object.isFrozen(check)) {
    const cached = checkKeys.get(check);
    if (cached !== undefined) return cached;
  }
  const bucket = bucketOf(check);
  const key = `${bucket.length}:${bucket}${limitKeyOf(check.limit)}`;
  if (Object.isFrozen(check)) checkKeys.set(check, key);
  return key;
}

interface Denial extends CachedDenial {
  /** The cost the shared store refused; requests costing at least this much are refused too. */
  readonly cost: number;
  /** On the cache's clock: the first instant the shared limit could admit that cost again. */
  readonly expiresAtMs: number;
  /** On the cache's clock: when the limit would be entirely unused again (a header hint). */
  readonly resetAtMs: number;
  readonly scope: string;
  readonly limit: number;
  readonly remaining: number;
}

/**
 * A live denial as the rejection flood's fast path reads it (`DecisionEngine.rejectFromCache`):
 * its instants on the cache's clock, the limit it names, and the decision's counts for the
 * metrics, made once when the denial is recorded rather than per rejection.
 */
export interface CachedDenial {
  readonly expiresAtMs: number;
  readonly resetAtMs: number;
  readonly scope: string;
  readonly limit: number;
  readonly remaining: number;
  /** What `DecisionMetrics.record` counts for a rejection this denial alone makes. */
  readonly metrics: MetricsDecision;
}

export interface DenialCacheOptions {
  /**
   * Most denials held (one per subject and rejecting limit); the least recently used is evicted.
   * Bounded because a flood of unique subjects, each rejected once, must not grow the process:
   * unbounded denial caches are a known failure of other libraries. Eviction only forgets a
   * rejection, which the shared store then makes again.
   * @default 10_000
   */
  readonly maxEntries?: number;
  /** Expiry is measured here; `sentAtMs` passed to `record` must come from it. @default monotonicClock */
  readonly clock?: Clock;
}

/**
 * A bounded cache of the shared store's recent rejections.
 *
 * Keying: per (subject, bucket, limit parameters), never per subject alone. A customer rejected
 * on `endpoint:reports` must still reach the store for `endpoint:search`, which that limit does
 * not cover, while a rejection on the `account` bucket covers every endpoint, because every
 * request of that customer carries the account check. Keying per whole bucket SET would be
 * equally safe but would miss exactly that: the account denial would not cover a request to
 * another endpoint class. Bucket rather than scope because the bucket is the stored state (an
 * override continues the tier's bucket); the limit's parameters are part of the key so that an
 * edit that raises the limit (a new tier value, an incident override) never meets a denial
 * recorded under the old numbers.
 *
 * Never outlives the real reset: a denial expires at `sentAtMs + min(retryAfterMs, resetAfterMs)`,
 * where `sentAtMs` is read BEFORE the store call, so the expiry is no later than the instant the
 * shared store computed (which is after the request was sent). Until then the shared limit could
 * not admit that cost even with no competition; other gateways' traffic only makes it later.
 *
 * Never lets more through: it only rejects. A denial recorded for cost c rejects only requests of
 * cost >= c (a cheaper request may fit in what is left). Only `limit-exceeded` rejections of
 * enforced limits from the shared store itself are recorded, never degraded or local decisions.
 *
 * What could still make it reject a request the store would admit: state removed from the shared
 * store behind its back (a flushed Redis) within the few hundred milliseconds a denial lives.
 */
export class DenialCache {
  /**
   * Per subject, its live denials, each under its check's key ({@link checkKeyOf}): one map
   * lookup by subject (whose string the policy's resolution reuses, hash included), then a scan
   * of a handful of entries, so finding builds no string. Least recently used subjects go first.
   */
  readonly #bySubject: BoundedLru<string, SubjectDenial[]>;
  readonly #maxEntries: number;
  readonly #clock: Clock;
  #count = 0;

  constructor(options: DenialCacheOptions = {}) {
    this.#maxEntries = options.maxEntries ?? 10_000;
    this.#bySubject = new BoundedLru(this.#maxEntries);
    this.#clock = options.clock ?? monotonicClock;
  }

  /** Denials held; at most `maxEntries`. */
  get size(): number {
    return this.#count;
  }

  /**
   * Remembers the enforced limits that rejected `decision`, the shared store's answer to `input`.
   * `sentAtMs` is this cache's clock read before the store was called. Does nothing for an
   * admission or a decision that did not come from the store.
   */
  record(input: EnforcerInput, decision: EnforcerDecision, sentAtMs: number): void {
    if (decision.allowed || decision.source !== "store") return;
    const cost = input.cost ?? 1;
    const { subject } = input;
    input.checks.forEach((check, index) => {
      const outcome = decision.outcomes[index];
      if (check.mode !== "enforce" || outcome === undefined || outcome.scope !== check.scope) {
        return;
      }
      if (outcome.allowed || outcome.reason !== "limit-exceeded") return;
      const livesMs = Math.min(outcome.retryAfterMs, outcome.resetAfterMs);
      if (!(livesMs > 0)) return;
      this.#set(subject, checkKeyOf(check), {
        cost,
        expiresAtMs: sentAtMs + livesMs,
        resetAtMs: sentAtMs + outcome.resetAfterMs,
        scope: check.scope,
        limit: outcome.limit,
        remaining: outcome.remaining,
        metrics: {
          allowed: false,
          outcomes: [{ scope: check.scope, mode: "enforce", allowed: false, fallback: null }],
          ...DENIAL_CACHE_PROVENANCE,
        },
      });
    });
  }

  /**
   * A local rejection when a live denial covers one of `input`'s enforced limits at this cost;
   * null otherwise (ask the shared store). Expired denials found on the way are dropped. `nowMs`:
   * this cache's clock, when the caller has read it already.
   */
  find(input: EnforcerInput, nowMs?: number): EnforcerDecision | null {
    return this.findFor(input.subject, input.checks, input.cost ?? 1, nowMs);
  }

  /**
   * {@link find} for a request given part by part: the hot path's lookup, which makes no input
   * object for a request the cache answers.
   */
  findFor(
    subject: string,
    checks: readonly EnforcerCheck[],
    cost: number,
    nowMs?: number,
  ): EnforcerDecision | null {
    if (this.#count === 0) return null;
    const denials = this.#bySubject.get(subject);
    if (denials === undefined) return null;
    return this.#findIn(denials, subject, checks, cost, nowMs ?? this.#clock.nowMs());
  }

  /**
   * The one live denial that rejects this request at `nowMs`, found as {@link findFor} finds
   * denials but answered only when a single denial covers the request, and without making a
   * decision: the rejection flood's fast path. Null when none covers it, or several do (then
   * {@link findFor} makes the decision, with every covering limit in it).
   */
  soleDenialFor(
    subject: string,
    checks: readonly EnforcerCheck[],
    cost: number,
    nowMs: number,
  ): CachedDenial | null {
    if (this.#count === 0) return null;
    const denials = this.#bySubject.get(subject);
    if (denials === undefined) return null;
    let sole: Denial | null = null;
    for (let checkIndex = 0; checkIndex < checks.length; checkIndex++) {
      const index = enforcedDenialIndex(denials, checks[checkIndex] as EnforcerCheck);
      if (index < 0) continue;
      const denial = (denials[index] as SubjectDenial).denial;
      // An expired or cheaper denial is left for findFor, which drops or skips it.
      if (nowMs >= denial.expiresAtMs) return null;
      if (cost < denial.cost) continue;
      if (sole !== null) return null;
      sole = denial;
    }
    return sole;
  }

  #findIn(
    denials: SubjectDenial[],
    subject: string,
    checks: readonly EnforcerCheck[],
    cost: number,
    nowMs: number,
  ): EnforcerDecision | null {
    // The common case is one live denial covering the request: it is kept alone, and a list is
    // made only for a second one (a `[]` grown by push would reserve room for many).
    let first: EnforcerOutcome | null = null;
    let more: EnforcerOutcome[] | null = null;
    for (let checkIndex = 0; checkIndex < checks.length; checkIndex++) {
      const index = enforcedDenialIndex(denials, checks[checkIndex] as EnforcerCheck);
      if (index < 0) continue;
      const denial = (denials[index] as SubjectDenial).denial;
      if (nowMs >= denial.expiresAtMs) {
        denials.splice(index, 1);
        this.#count--;
        continue;
      }
      if (cost < denial.cost) continue;
      const outcome = deniedOutcomeOf(denial, nowMs);
      if (first === null) first = outcome;
      else if (more === null) more = [first, outcome];
      else more.push(outcome);
    }
    if (denials.length === 0) this.#bySubject.delete(subject);
    if (first === null) return null;
    return enforcerDecisionOf(more ?? [first], DENIAL_CACHE_PROVENANCE);
  }

  #set(subject: string, key: string, denial: Denial): void {
    let denials = this.#bySubject.get(subject);
    if (denials === undefined) {
      denials = [];
      const evicted = this.#bySubject.set(subject, denials);
      if (evicted !== null) this.#count -= evicted.value.length;
    }
    const existing = denials[indexOfKey(denials, key)];
    if (existing !== undefined) {
      existing.denial = denial;
      return;
    }
    denials.push({ key, denial });
    this.#count++;
    // Over the bound (a subject with several denials): the least recently used subjects go, and
    // if only this one is left, its oldest denials.
    while (this.#count > this.#maxEntries) {
      const oldest = this.#bySubject.oldest();
      if (oldest === undefined) break;
      const [oldestSubject, oldestDenials] = oldest;
      if (oldestDenials === denials) {
        denials.shift();
        this.#count--;
      } else {
        this.#bySubject.delete(oldestSubject);
        this.#count -= oldestDenials.length;
      }
    }
  }
}

/**
 * Where the subject's denial of `check` sits in `denials`, live or expired; -1 when it has none,
 * or when the check is not enforced (a dry-run or disabled check never rejects from the cache).
 */
function enforcedDenialIndex(denials: readonly SubjectDenial[], check: EnforcerCheck): number {
  return check.mode === "enforce" ? indexOfKey(denials, checkKeyOf(check)) : -1;
}

/** Where a decision of the denial cache came from: the same for every one. */
const DENIAL_CACHE_PROVENANCE = {
  source: "denial-cache",
  degraded: false,
  failure: null,
} as const satisfies Pick<EnforcerDecision, "source" | "degraded" | "failure">;

/** The rejection `denial` gives at `nowMs` (before its expiry). */
function deniedOutcomeOf(denial: Denial, nowMs: number): EnforcerOutcome {
  const retryAfterMs = Math.ceil(denial.expiresAtMs - nowMs);
  return {
    allowed: false,
    limit: denial.limit,
    remaining: denial.remaining,
    retryAfterMs,
    resetAfterMs: Math.max(retryAfterMs, Math.ceil(denial.resetAtMs - nowMs)),
    reason: "limit-exceeded",
    scope: denial.scope,
    mode: "enforce",
    fallback: null,
  };
}

function indexOfKey(denials: readonly SubjectDenial[], key: string): number {
  for (let index = 0; index < denials.length; index++) {
    if (denials[index]?.key === key) return index;
  }
  return -1;
}

/** One live denial of a subject, under its check's key. */
interface SubjectDenial {
  readonly key: string;
  denial: Denial;
}

export interface FloodGuardOptions {
  /**
   * How many times each enforced limit the guard allows at this gateway (size and rate both
   * scaled). Generous on purpose: it only has to catch what the shared limit would reject anyway,
   * and never starve a client the shared limit admits.
   * @default 2
   */
  readonly multiplier?: number;
  /** Most keys held, least recently used evicted. @default 100_000 */
  readonly maxKeys?: number;
  /** @default monotonicClock */
  readonly clock?: Clock;
}

/**
 * A generous in-process limiter: each enforced limit scaled by `multiplier`, on a `MemoryStore`.
 * A request it admits consumes its local budget and goes on to the shared store; a request it
 * rejects never costs a network call. Dry-run limits are not guarded.
 *
 * Its rejections report the REAL limit's size (`remaining` capped to it), not the scaled one, so
 * the client's headers stay consistent with `RateLimit-Policy`.
 *
 * Trade-off: with a multiplier of 2, a gateway that alone receives more than twice what the shared
 * limit can ever admit for a subject starts shedding that subject locally; the guard refills at
 * twice the real rate, so a client that backs off is served again before the shared limit would.
 */
/** The flood guard's checks for one list of request checks, and the real limits' sizes. */
interface GuardChecks {
  readonly checks: readonly LimitCheck[];
  readonly sizes: readonly number[];
}

export class FloodGuard {
  readonly #multiplier: number;
  readonly #store: MemoryStore;
  readonly #scaled = new WeakMap<LimitSpec, LimitSpec>();
  readonly #guardChecksByList = new WeakMap<readonly EnforcerCheck[], GuardChecks>();

  constructor(options: FloodGuardOptions = {}) {
    this.#multiplier = options.multiplier ?? 2;
    if (!(this.#multiplier >= 1 && this.#multiplier <= 1_000)) {
      throw new RangeError(`multiplier must be from 1 to 1000, got ${this.#multiplier}`);
    }
    this.#store = new MemoryStore({
      maxKeys: options.maxKeys ?? 100_000,
      clock: options.clock ?? monotonicClock,
    });
  }

  get keyCount(): number {
    return this.#store.keyCount;
  }

  /** A local rejection, or null when the guard admitted the request (and consumed locally). */
  check(input: EnforcerInput): EnforcerDecision | null {
    const { checks: enforced, sizes } = this.#guardChecks(input.checks);
    if (enforced.length === 0) return null;
    const local = this.#store.decideSync({
      subject: input.subject,
      checks: enforced,
      cost: input.cost ?? 1,
    });
    if (local.allowed) return null;
    const outcomes: EnforcerOutcome[] = local.outcomes.map((outcome, index) => {
      const size = sizes[index] ?? outcome.limit;
      return {
        ...outcome,
        limit: size,
        remaining: Math.min(outcome.remaining, Math.floor(size)),
        fallback: null,
      };
    });
    return enforcerDecisionOf(outcomes, { source: "flood-guard", degraded: false, failure: null });
  }

  /**
   * The guard's checks for a request's checks: each enforced limit scaled, on its own bucket.
   * Remembered per list, since the policy reuses one frozen list per tier and endpoint class:
   * the store then knows the list and checks nothing per request.
   */
  #guardChecks(checks: readonly EnforcerCheck[]): GuardChecks {
    const cached = this.#guardChecksByList.get(checks);
    if (cached !== undefined) return cached;
    const enforced: LimitCheck[] = [];
    const sizes: number[] = [];
    for (const check of checks) {
      if (check.mode !== "enforce") continue;
      enforced.push(
        Object.freeze({
          scope: check.scope,
          bucket: bucketOf(check),
          limit: this.#scaledLimit(check.limit),
          mode: "enforce",
        }),
      );
      sizes.push(limitSize(check.limit));
    }
    const guard: GuardChecks = { checks: Object.freeze(enforced), sizes: Object.freeze(sizes) };
    this.#guardChecksByList.set(checks, guard);
    return guard;
  }

  #scaledLimit(spec: LimitSpec): LimitSpec {
    const cached = this.#scaled.get(spec);
    if (cached !== undefined) return cached;
    const scaled = scaleLimit(spec, this.#multiplier);
    this.#scaled.set(spec, scaled);
    return scaled;
  }
}

export interface LocalStageOptions {
  /** The denial cache's options, or false to run without it. @default {} */
  readonly denialCache?: DenialCacheOptions | false;
  /** The flood guard's options, or false to run without it. @default {} */
  readonly floodGuard?: FloodGuardOptions | false;
  /** Shared by both parts unless their own options name one. @default monotonicClock */
  readonly clock?: Clock;
}

/**
 * The first stage without leases:
 *
 * ```ts
 * const sentAtMs = clock.nowMs();
 * const local = stage.check(input);             // a rejection, or null
 * const decision = local ?? (await guarded.decide(input));
 * if (local === null) stage.recordSharedDecision(input, decision, sentAtMs);
 * ```
 *
 * The denial cache is consulted first (a lookup, and a request it rejects does not spend the flood
 * guard's budget), then the flood guard. The runtime (`DecisionEngine.check`) asks the two parts
 * one at a time, with the lease table between them: a leased admission is exact and spends no
 * flood guard budget.
 */
export class LocalStage {
  readonly denialCache: DenialCache | null;
  readonly floodGuard: FloodGuard | null;

  constructor(options: LocalStageOptions = {}) {
    const clock = options.clock ?? monotonicClock;
    this.denialCache =
      options.denialCache === false ? null : new DenialCache({ clock, ...options.denialCache });
    this.floodGuard =
      options.floodGuard === false ? null : new FloodGuard({ clock, ...options.floodGuard });
  }

  /** A local rejection, or null to ask the shared store. */
  check(input: EnforcerInput): EnforcerDecision | null {
    return this.denialCache?.find(input) ?? this.floodGuard?.check(input) ?? null;
  }

  /** Feeds the shared store's answer to the denial cache (`sentAtMs`: read before the call). */
  recordSharedDecision(input: EnforcerInput, decision: EnforcerDecision, sentAtMs: number): void {
    this.denialCache?.record(input, decision, sentAtMs);
  }
}
