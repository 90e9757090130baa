/**
 * Leases: a slice of a subject's budget reserved in the shared store for this gateway alone,
 * spent here without a network call (the seed's "explicitly divide its budget among instances"
 * and "local buckets plus reconciliation" are the two ends of it).
 *
 * A store decision may ask for a lease (`RedisStore.decideLeasing`): once the request is
 * admitted, the script charges up to the wanted units more on every check of the request, at
 * most half of what each check has left, and answers how many it granted and for how long they
 * may be spent (see the script for why spending them within that lifetime never admits more than
 * the limit). This table holds the grants, per subject and list of checks, and admits a request
 * locally while a live grant of that very list has units for its cost.
 *
 * - Exact: a unit is charged in the shared store before it is spent here, and spent at most
 *   once; a grant is never spent after its lifetime, measured from before the store call was sent
 *   (the store's instant is later, so the lifetime ends here no later than the store allowed).
 * - Never across policies: grants are kept per check list object, which the policy makes anew
 *   for every snapshot, and the table's leases are retired when the snapshot changes, so a
 *   lowered limit is never spent at its old size.
 * - Nothing is lost: units a grant has not spent when it ends (its lifetime is up, the policy
 *   changed, its subject was dropped, the gateway stops) are given back to the store
 *   (`LimiterStore.returnLease`), once, after this table has stopped spending them, so the limit
 *   admits them elsewhere. A grant stops being spent a little before its lifetime ends
 *   ({@link returnLeadMs}), so that its return reaches the store while the units are still its
 *   own to give back. Meanwhile another gateway may be rejected early: bounded (a grant is at
 *   most half of what is left, and at most `maxUnits`) and brief (a lifetime at most).
 * - A gateway that dies holding grants cannot give them back, and their units stay charged. So
 *   a grant is at most what each of its limits refills in half of `maxLossMs` (two grants may be
 *   out at once), and a limit that refills less than that is not leased at all: a killed gateway
 *   costs a subject at most `maxLossMs` of its limits' refill. Counted: `returnedUnits` came
 *   back; `expiredUnits` ended unspent and did not (the store refused them or did not answer).
 * - Demand first: a list is leased only once this gateway has seen it at least 4 times over the
 *   last whole lifetime (2, for a list leased within the last lifetime), and asks for about twice
 *   that, so a quiet subject (or the first burst of a new one) holds nothing and a busy one rarely
 *   waits on the store. A subject seen fewer times a lifetime but at least 4 times over the last
 *   4 lifetimes (a thousand customers sharing a few thousand requests a second) is leased for
 *   4 lifetimes, at about twice what those saw: as many units a second as a busy subject's lease
 *   would hold at its pace, spread over a longer life. The next grant is asked for while the last request this one can admit is
 *   being admitted, judged by the gap between the subject's requests.
 * - Refills and returns travel together: the store may hold them back for a fiftieth of the
 *   lifetime (at most 20 ms) to send them with other calls, so a thousand busy subjects cost a
 *   few dozen round trips a second rather than a thousand. A request's own store call is never
 *   held back.
 */

import { GenerationalMap } from "../collections/generational-map";
import type { Clock } from "../limiter/clock";
import { monotonicClock } from "../limiter/clock";
import { type StoreTime, setStoreTime, storeTimeOf } from "../limiter/stores/store-time";
import { systemTimers, type TimerHandle, type Timers } from "../limiter/timers";
import type { LeaseReturn, LimitSpec } from "../limiter/types";
import { limitSize } from "../policy/limit-math";
import {
  type EnforcerCheck,
  type EnforcerDecision,
  type EnforcerInput,
  type EnforcerOutcome,
  enforcerDecisionOf,
} from "./types";

export interface LeaseOptions {
  /**
   * Most units one lease reserves. Larger means fewer store calls for a busy subject and more
   * units another gateway may find reserved; each grant is also at most half of what is left.
   * @default 1_000
   */
  readonly maxUnits?: number;
  /**
   * Lifetime of a lease in ms, and the span a subject's demand is counted over. A subject seen
   * fewer than 4 times a lifetime but 4 times over 4 lifetimes is leased for 4 lifetimes. A
   * window's lease also ends with the window (and lasts at most a fifth of it), and a token
   * bucket's may end with the reservation it joins (see the decide script).
   * @default 1_000
   */
  readonly lifeMs?: number;
  /**
   * Most subjects holding leases; those unused longest are dropped (their units given back when
   * their grants end).
   * @default 10_000
   */
  readonly maxEntries?: number;
  /**
   * Bounds what a gateway that dies holding leases (killed, out of memory, its host gone) costs a
   * subject, as time of its limits' refill: the units it held stay charged. Every grant is at
   * most what each of its limits refills in half this long (a token bucket's rate, a window's
   * limit per window), so a limit that refills less than 2 units in that time (a daily quota, a
   * bucket refilled over hours) is never leased, and every decision on it goes to the store. A
   * gateway that stops cleanly gives every unspent unit back, whatever this is.
   * @default 60_000
   */
  readonly maxLossMs?: number;
  /** @default monotonicClock */
  readonly clock?: Clock;
  /**
   * The timer that gives back the units of grants whose lifetime ended with nobody spending
   * them, on `clock`'s time.
   * @default systemTimers
   */
  readonly timers?: Timers;
  /**
   * Where unspent units go back to: the runtime sends them to the store. Without one they are
   * counted expired (tests of the table alone).
   * @default none
   */
  readonly returner?: LeaseReturner;
  /**
   * Whether a leased admission carries its grant's Redis time (`store-time.ts`), for the traffic
   * record; off, a leased admission costs no WeakMap entry. The runtime sets it when recording.
   * @default false
   */
  readonly keepsStoreTime?: boolean;
}

/** What a store call should ask for: 0 units when no lease is wanted. */
export interface LeaseRequest {
  readonly units: number;
  readonly lifeMs: number;
  /** How long the store may hold the call back to send it with others (refills only). */
  readonly maxDelayMs?: number;
}

/** What the store said of a lease it was asked for (`LeasedDecision`, guarded). */
export interface LeaseGrant {
  readonly decision: EnforcerDecision;
  /** Units granted (0: none). */
  readonly units: number;
  /** Their lifetime as the store gave it, in ms. */
  readonly lifeMs: number;
  /** The store's time of the grant, in ms (what a return names the grant by). */
  readonly grantedAtMs: number;
}

/** Requests over the last lifetime below which a list is not leased. */
const MIN_DEMAND = 4;
/**
 * The same for a list leased within the last lifetime: a subject keeps its lease down to half
 * the demand it takes to get one. Without the gap, a subject near 4 requests a second (a
 * thousand customers sharing a few thousand requests a second) lost its lease whenever one
 * lifetime saw 3 and sent the next lifetime's requests to the store; a slower gateway gives
 * every subject fewer requests a second, so more fell under 4 (in the HTTP bench's
 * half-rejected mix, 5 to 46 % of admissions waited on the store, the most in the slowest runs).
 */
const KEEP_DEMAND = 2;

/**
 * How many lifetimes a slow subject's demand is counted over, and its lease lasts (a window's at
 * most a fifth of the window). Leases went only to subjects seen 4 times a lifetime: over 1,000
 * customers at a few thousand requests a second, each gateway saw most customers 2 or 3 times a
 * second, and 90 % of admissions waited on the store. Counted over 4 lifetimes, a subject
 * sending one request a second is leased. A slow lease holds at most what a busy one would
 * reserve at the same pace (twice the demand of its life), trimmed and given back like any other.
 */
const SLOW_LIVES = 4;

/**
 * A refill may wait this share of the lifetime (at most {@link MAX_REFILL_DELAY_MS}) for other
 * store calls to travel with: it is asked for with a fifth of the lifetime still to run, or half
 * the units still to spend, so the wait costs the lease nothing it needs. Refills of a thousand
 * busy subjects come a few a millisecond; held back 20 ms, a few dozen share one round trip
 * instead of each taking its own. Returns wait the same.
 */
const REFILL_DELAY_SHARE = 1 / 50;
const MAX_REFILL_DELAY_MS = 20;

/**
 * How long before its lifetime ends a grant stops being spent and gives its unspent units back:
 * a tenth of the lifetime, at most 50 ms. The store takes units back exactly while the lifetime
 * runs (a token bucket's reservation is still the grant's; a window is still the one the units
 * came from), and a return may wait up to {@link SWEEP_INTERVAL_MS} for the sweep that finds it
 * and up to {@link MAX_REFILL_DELAY_MS} to travel with other calls.
 */
const MAX_RETURN_LEAD_MS = 50;
const RETURN_LEAD_SHARE = 1 / 10;
/** How often, while any grant is out, grants that ended with nobody spending them are retired. */
const SWEEP_INTERVAL_MS = 20;
/** A limit whose grants could not reach this many units (see `maxLossMs`) is not leased. */
const MIN_GRANT_UNITS = 2;
/** Leases a window's lifetime spans at least (see `#termsOf`). */
const WINDOW_LEASES = 5;
/** The shortest lease asked for a window; a shorter window is not leased. */
const MIN_LEASE_LIFE_MS = 20;
/** The longest lifetime the store grants (the decide script's bound). */
const MAX_LEASE_LIFE_MS = 3_600_000;

/**
 * How a list of checks is leased: at most `maxUnits` a grant (0: never), for `lifeMs`, or for
 * `slowLifeMs` when its subject is slow (see {@link SLOW_LIVES}).
 */
interface LeaseTerms {
  readonly maxUnits: number;
  readonly lifeMs: number;
  readonly slowLifeMs: number;
}

/** How long before its lifetime of `lifeMs` ends a grant stops being spent. */
export function returnLeadMs(lifeMs: number): number {
  return Math.min(MAX_RETURN_LEAD_MS, lifeMs * RETURN_LEAD_SHARE);
}

const NO_LEASE: LeaseRequest = Object.freeze({ units: 0, lifeMs: 0 });

/** Asks the store for more units of a lease, off the request's path (the runtime). */
export interface LeaseRefiller {
  refill(input: EnforcerInput, lease: LeaseRequest): void;
}

/**
 * Gives a grant's unspent units back to the store, off the request's path (the runtime), and
 * calls `settled` with the units the store took back (0 if it took none or gave no answer).
 */
export interface LeaseReturner {
  giveBack(input: EnforcerInput, lease: LeaseReturn, settled: (units: number) => void): void;
}

/** One grant: units to spend until `expiresAtMs`, and what the store said was left besides. */
interface Grant {
  readonly lease: Lease;
  units: number;
  /** When this table stops spending it: its lifetime less {@link returnLeadMs}. */
  readonly expiresAtMs: number;
  /** Per check, the store's `remaining` after the request that came with the grant. */
  readonly remaining: readonly number[];
  readonly resetAfterMs: readonly number[];
  readonly grantedAtMs: number;
  spent: number;
  /** The store's time of the grant and the lifetime it gave: what a return names it by. */
  readonly storeAtMs: number;
  readonly storeLifeMs: number;
  /** Its unspent units were given back (or counted expired): never twice. */
  isRetired: boolean;
  /** What its subject will not spend before it ends was given back (see `#trim`). */
  isTrimmed: boolean;
  /**
   * When Redis charged the units (`store-time.ts`): what a leased admission reports as its
   * time and order, for the traffic record, so a backtest replays it where Redis counted it.
   */
  readonly storeTime: StoreTime | undefined;
}

/** A subject's lease on one list of checks. */
interface Lease {
  readonly subject: string;
  readonly checks: readonly EnforcerCheck[];
  /** The grant being spent, then the one that came after it (a refill asked for in advance). */
  current: Grant | null;
  next: Grant | null;
  /** Requests seen since `seenSinceMs`, and over the lifetime before. */
  seen: number;
  seenSinceMs: number;
  seenBefore: number;
  /** The same over {@link SLOW_LIVES} lifetimes. */
  slowSeen: number;
  slowSeenSinceMs: number;
  slowSeenBefore: number;
  /** The lifetime its grants are asked for: the list's, or its slow one (see {@link #wanted}). */
  lifeMs: number;
  /** A refill is in flight: nobody else asks for one. */
  isRefilling: boolean;
  /** When the latest grant ends (0: none yet); within a lifetime of it, KEEP_DEMAND applies. */
  leasedUntilMs: number;
}

/** Counts, for metrics and tests. */
export interface LeaseFigures {
  /** Requests admitted from a lease, without the store. */
  readonly admitted: number;
  /** Units granted by the store. */
  readonly grantedUnits: number;
  /** Units a grant did not spend, given back to the store and taken back by it. */
  readonly returnedUnits: number;
  /**
   * Units a grant did not spend that did not go back: the store took back fewer (the window
   * they came from was over), or refused or did not answer. They stay charged.
   */
  readonly expiredUnits: number;
  /** Units on their way back to the store, not answered yet. */
  readonly returningUnits: number;
  /** Subjects holding leases now. */
  readonly subjects: number;
  /** Store calls asking for a lease that have not been answered yet. */
  readonly inFlight: number;
}

export class LeaseTable {
  readonly maxUnits: number;
  readonly lifeMs: number;
  readonly maxLossMs: number;
  /** How long a refill or a return may be held back by the store (see {@link REFILL_DELAY_SHARE}). */
  readonly refillDelayMs: number;
  readonly #clock: Clock;
  readonly #timers: Timers;
  readonly #returner: LeaseReturner | undefined;
  readonly #keepsStoreTime: boolean;
  /** Leases by subject; subjects unused for a whole generation are dropped. */
  readonly #bySubject: GenerationalMap<string, Lease[]>;
  /** Every grant not yet retired, earliest end first: what the sweep retires once it ends. */
  readonly #byEnd = new GrantHeap();
  #sweepTimer: TimerHandle | undefined;
  /** Per list of checks, how it is leased (see {@link #termsOf}). */
  readonly #terms = new WeakMap<readonly EnforcerCheck[], LeaseTerms>();
  #admitted = 0;
  #grantedUnits = 0;
  #returnedUnits = 0;
  #expiredUnits = 0;
  #returningUnits = 0;
  /** Leases asked for (`want`, a refill) and not yet `granted` or `refillFailed`. */
  #inFlight = 0;

  constructor(options: LeaseOptions = {}) {
    this.maxUnits = options.maxUnits ?? 1_000;
    if (!(Number.isInteger(this.maxUnits) && this.maxUnits >= 1 && this.maxUnits <= 1e9)) {
      throw new RangeError(
        `leases.maxUnits must be a whole number from 1 to 1e9, got ${this.maxUnits}`,
      );
    }
    this.lifeMs = options.lifeMs ?? 1_000;
    if (!(Number.isInteger(this.lifeMs) && this.lifeMs >= 1 && this.lifeMs <= 3_600_000)) {
      throw new RangeError(
        `leases.lifeMs must be a whole number of ms from 1 to 3600000, got ${this.lifeMs}`,
      );
    }
    this.maxLossMs = options.maxLossMs ?? 60_000;
    if (!(this.maxLossMs >= 2 * this.lifeMs && this.maxLossMs <= 86_400_000)) {
      throw new RangeError(
        `leases.maxLossMs must be a number of ms from twice leases.lifeMs (${2 * this.lifeMs}) to 86400000, got ${this.maxLossMs}`,
      );
    }
    this.refillDelayMs = Math.min(
      MAX_REFILL_DELAY_MS,
      Math.floor(this.lifeMs * REFILL_DELAY_SHARE),
    );
    const maxEntries = options.maxEntries ?? 10_000;
    if (!(Number.isInteger(maxEntries) && maxEntries >= 2)) {
      throw new RangeError(`leases.maxEntries must be a whole number >= 2, got ${maxEntries}`);
    }
    // A dropped subject's grants stay in #byEnd: the sweep gives their units back when they end.
    this.#bySubject = new GenerationalMap({ maxWeight: maxEntries });
    this.#clock = options.clock ?? monotonicClock;
    this.#timers = options.timers ?? systemTimers;
    this.#returner = options.returner;
    this.#keepsStoreTime = options.keepsStoreTime === true;
  }

  figures(): LeaseFigures {
    return {
      admitted: this.#admitted,
      grantedUnits: this.#grantedUnits,
      returnedUnits: this.#returnedUnits,
      expiredUnits: this.#expiredUnits,
      returningUnits: this.#returningUnits,
      subjects: this.#bySubject.size,
      inFlight: this.#inFlight,
    };
  }

  /**
   * A local admission when a live grant of `input`'s checks holds units for its cost (spent
   * now); null otherwise (ask the store, with {@link want}). Counts the request as demand either
   * way. `refiller.refill` is called (once, until {@link granted} or {@link refillFailed}) when
   * the units left fall under half of the grant or its lifetime is nearly over (see
   * {@link #refillLeadMs}), so a busy subject's next grant is on its way before this one runs out
   * or ends. `isNewRequest` false: a request already counted (the store rejected it), not
   * counted again.
   */
  take(
    input: EnforcerInput,
    refiller: LeaseRefiller,
    isNewRequest = true,
    nowMsRead?: number,
  ): EnforcerDecision | null {
    const lease = this.#leaseOf(input.subject, input.checks);
    if (lease === null) return null;
    const nowMs = nowMsRead ?? this.#clock.nowMs();
    if (isNewRequest) this.#countDemand(lease, nowMs);
    const cost = input.cost ?? 1;
    // Grants retired here go back at once, not held for company: this request may go to the
    // store next, and on the same connection the return arrives first, so it counts them.
    let grant = this.#liveGrant(lease, nowMs, 0);
    if (grant !== null && grant.units < cost && lease.next !== null) {
      // What is left of the older grant cannot pay for this request: the newer one does.
      this.#retire(grant, 0);
      grant = this.#liveGrant(lease, nowMs, 0);
    }
    if (grant === null || grant.units < cost) return null;
    grant.units -= cost;
    grant.spent += cost;
    this.#admitted++;
    const leadMs = this.#refillLeadMs(lease, grant, nowMs);
    const leftMs = grant.expiresAtMs - nowMs;
    if (!grant.isTrimmed && leftMs <= leadMs) this.#trim(lease, grant, leftMs, cost, nowMs);
    if (
      !lease.isRefilling &&
      lease.next === null &&
      (grant.units < grant.spent || leftMs <= leadMs)
    ) {
      const wanted = this.#wanted(lease, nowMs);
      if (wanted > 0) {
        lease.isRefilling = true;
        this.#inFlight++;
        refiller.refill(input, {
          units: wanted,
          lifeMs: lease.lifeMs,
          maxDelayMs: this.refillDelayMs,
        });
      }
    }
    return localDecision(input.checks, grant, nowMs);
  }

  /**
   * What a store call for `input` should lease: nothing until this gateway has seen the list at
   * least 4 times over the last whole lifetime, or while a refill is in flight; then about twice
   * that, at most `maxUnits` and what `maxLossMs` allows.
   */
  want(input: EnforcerInput): LeaseRequest {
    if (this.#grantCapOf(input.checks) === 0) return NO_LEASE;
    const nowMs = this.#clock.nowMs();
    let lease = this.#leaseOf(input.subject, input.checks);
    if (lease === null) {
      lease = this.#newLease(input.subject, input.checks, nowMs);
      lease.seen = 1;
      lease.slowSeen = 1;
      return NO_LEASE;
    }
    // `take` counted this request already when it found the lease.
    if (lease.isRefilling) return NO_LEASE;
    const wanted = this.#wanted(lease, nowMs);
    if (wanted === 0) return NO_LEASE;
    lease.isRefilling = true;
    this.#inFlight++;
    return { units: wanted, lifeMs: lease.lifeMs };
  }

  /**
   * The store's answer to a lease of `input`'s checks (0 units: none), `sentAtMs` read on this
   * table's clock before the call was sent. Ends the refill in flight. Called once for every
   * lease asked for ({@link want} or a refill), or {@link refillFailed} instead.
   */
  granted(input: EnforcerInput, answer: LeaseGrant, sentAtMs: number): void {
    this.#inFlight--;
    const units = answer.units;
    const lifeMs = answer.lifeMs;
    const lease = this.#leaseOf(input.subject, input.checks);
    if (lease !== null) lease.isRefilling = false;
    if (!(units > 0 && lifeMs > 0)) return;
    this.#grantedUnits += units;
    const decision = answer.decision;
    const grant: Grant = {
      lease: lease ?? this.#orphanLease(input),
      units,
      expiresAtMs: sentAtMs + lifeMs - returnLeadMs(lifeMs),
      remaining: decision.outcomes.map((outcome) => outcome.remaining),
      resetAfterMs: decision.outcomes.map((outcome) => outcome.resetAfterMs),
      grantedAtMs: sentAtMs,
      spent: 0,
      storeAtMs: answer.grantedAtMs,
      storeLifeMs: lifeMs,
      isRetired: false,
      isTrimmed: false,
      storeTime: this.#keepsStoreTime ? storeTimeOf(decision) : undefined,
    };
    const nowMs = this.#clock.nowMs();
    if (lease === null || grant.expiresAtMs <= nowMs) {
      // Dropped meanwhile (evicted, or retired by a new snapshot), or too late to spend: the
      // units go straight back.
      this.#retire(grant);
      return;
    }
    this.#byEnd.push(grant);
    this.#scheduleSweep();
    const endMs = sentAtMs + lifeMs;
    if (endMs > lease.leasedUntilMs) lease.leasedUntilMs = endMs;
    this.#liveGrant(lease, nowMs);
    if (lease.current === null) lease.current = grant;
    else {
      if (lease.next !== null) this.#retire(lease.current);
      if (lease.current === null) lease.current = grant;
      else lease.next = grant;
    }
  }

  /** A refill or leasing call that got no answer: another may be asked for. */
  refillFailed(input: EnforcerInput): void {
    this.#inFlight--;
    const lease = this.#leaseOf(input.subject, input.checks);
    if (lease !== null) lease.isRefilling = false;
  }

  /**
   * Retires every lease (a new policy snapshot, or the gateway stopping): nothing is spent from
   * them again, and their unspent units go back to the store.
   */
  clear(): void {
    this.#bySubject.clear();
    for (let grant = this.#byEnd.pop(); grant !== undefined; grant = this.#byEnd.pop()) {
      this.#retire(grant);
    }
    this.#sweepTimer?.cancel();
    this.#sweepTimer = undefined;
  }

  #leaseOf(subject: string, checks: readonly EnforcerCheck[]): Lease | null {
    const leases = this.#bySubject.get(subject);
    if (leases === undefined) return null;
    for (let i = 0; i < leases.length; i++) {
      const lease = leases[i] as Lease;
      if (lease.checks === checks) return lease;
    }
    return null;
  }

  #newLease(subject: string, checks: readonly EnforcerCheck[], nowMs: number): Lease {
    const lease: Lease = {
      subject,
      checks,
      current: null,
      next: null,
      seen: 0,
      seenSinceMs: nowMs,
      seenBefore: 0,
      slowSeen: 0,
      slowSeenSinceMs: nowMs,
      slowSeenBefore: 0,
      lifeMs: this.#termsOf(checks).lifeMs,
      isRefilling: false,
      leasedUntilMs: 0,
    };
    let leases = this.#bySubject.get(subject);
    if (leases === undefined) {
      leases = [];
      this.#bySubject.set(subject, leases);
    }
    leases.push(lease);
    return lease;
  }

  /** A lease the table no longer holds, for a grant that arrived after it was dropped. */
  #orphanLease(input: EnforcerInput): Lease {
    return {
      subject: input.subject,
      checks: input.checks,
      current: null,
      next: null,
      seen: 0,
      seenSinceMs: 0,
      seenBefore: 0,
      slowSeen: 0,
      slowSeenSinceMs: 0,
      slowSeenBefore: 0,
      lifeMs: this.#termsOf(input.checks).lifeMs,
      isRefilling: false,
      leasedUntilMs: 0,
    };
  }

  #countDemand(lease: Lease, nowMs: number): void {
    if (nowMs - lease.seenSinceMs >= this.lifeMs) {
      // A whole lifetime or more has passed: what it saw becomes the last lifetime's demand
      // (nothing, if more than one passed).
      lease.seenBefore = nowMs - lease.seenSinceMs < 2 * this.lifeMs ? lease.seen : 0;
      lease.seen = 0;
      lease.seenSinceMs = nowMs;
    }
    lease.seen++;
    const slowLifeMs = SLOW_LIVES * this.lifeMs;
    if (nowMs - lease.slowSeenSinceMs >= slowLifeMs) {
      lease.slowSeenBefore = nowMs - lease.slowSeenSinceMs < 2 * slowLifeMs ? lease.slowSeen : 0;
      lease.slowSeen = 0;
      lease.slowSeenSinceMs = nowMs;
    }
    lease.slowSeen++;
  }

  /**
   * About twice what the last whole lifetime saw, so a grant outlasts the refill it triggers;
   * nothing below MIN_DEMAND. Only whole lifetimes count: a burst on a quiet subject (a client's
   * first few requests at once) is never leased, so it is decided by the store exactly as without
   * leases, and no units are left unspent behind it. A subject under MIN_DEMAND a lifetime is
   * judged the same way over {@link SLOW_LIVES} lifetimes, and then leased for that long; the
   * lifetime chosen is kept in `lease.lifeMs` for the call that asks. At most `maxUnits` and the
   * list's cap ({@link #grantCapOf}).
   */
  #wanted(lease: Lease, nowMs: number): number {
    const least = nowMs < lease.leasedUntilMs + lease.lifeMs ? KEEP_DEMAND : MIN_DEMAND;
    const terms = this.#termsOf(lease.checks);
    let seen = lease.seenBefore;
    let countedMs = this.lifeMs;
    let lifeMs = terms.lifeMs;
    // Under MIN_DEMAND a lifetime, a slow lease when the list has one (a subject kept at 2 or 3
    // a lifetime by KEEP_DEMAND alone had short leases with a request or two each, and the end of
    // each was a request waiting on the store). A slow lease turns short only at twice that: its
    // refill is asked for up to half its long life ahead, so a short grant asked for then ends
    // soon after it takes over, and only a busy subject's next request comes before that.
    const shortFrom = lease.lifeMs > terms.lifeMs ? 2 * MIN_DEMAND : MIN_DEMAND;
    const isSlow =
      seen < shortFrom && terms.slowLifeMs > terms.lifeMs && lease.slowSeenBefore >= least;
    if (isSlow) {
      seen = lease.slowSeenBefore;
      countedMs = SLOW_LIVES * this.lifeMs;
      lifeMs = terms.slowLifeMs;
    } else if (seen < least) {
      return 0;
    }
    lease.lifeMs = lifeMs;
    return Math.min(terms.maxUnits, Math.ceil((2 * seen * lifeMs) / countedMs));
  }

  /**
   * The most units a grant on `checks` may have: `maxUnits`, and what each check's limit
   * refills in half of `maxLossMs`; 0 (never leased) when that is under MIN_GRANT_UNITS, or when
   * a check is dry-run (its would-rejects stay exactly what the store counts, which a lease's
   * local admissions could not reproduce) or of an algorithm the store does not lease (a sliding
   * log or a leaky meter).
   */
  #grantCapOf(checks: readonly EnforcerCheck[]): number {
    return this.#termsOf(checks).maxUnits;
  }

  /**
   * How `checks` are leased: the most units a grant may have ({@link #grantCapOf}), and the
   * lifetime asked for: `lifeMs`, and at most a fifth of the shortest window among them. A
   * window's lease ends with the window, so with windows about as long as a lease, units given
   * back came back as the window ended, when nothing could use them: a busy gateway's
   * requests were rejected under the limit while quiet ones held units (1-second windows: up to
   * 12 % fewer admitted than without leases). Five leases a window give units back while the
   * window runs; a window shorter than five times MIN_LEASE_LIFE_MS is not leased.
   */
  #termsOf(checks: readonly EnforcerCheck[]): LeaseTerms {
    const known = this.#terms.get(checks);
    if (known !== undefined) return known;
    let maxUnits = checks.length > 0 ? this.maxUnits : 0;
    let lifeMs = this.lifeMs;
    let slowLifeMs = Math.min(MAX_LEASE_LIFE_MS, SLOW_LIVES * this.lifeMs);
    for (const check of checks) {
      const perSec = check.mode === "enforce" ? leasedRefillPerSec(check.limit) : 0;
      maxUnits = Math.min(maxUnits, Math.floor((perSec * this.maxLossMs) / 2_000));
      const limit = check.limit;
      if (limit.algorithm === "fixed-window" || limit.algorithm === "sliding-window") {
        const windowLifeMs = Math.floor(limit.windowMs / WINDOW_LEASES);
        lifeMs = Math.min(lifeMs, windowLifeMs);
        slowLifeMs = Math.min(slowLifeMs, windowLifeMs);
      }
    }
    if (maxUnits < MIN_GRANT_UNITS || lifeMs < Math.min(this.lifeMs, MIN_LEASE_LIFE_MS)) {
      maxUnits = 0;
    }
    const terms = { maxUnits, lifeMs, slowLifeMs };
    this.#terms.set(checks, terms);
    return terms;
  }

  /**
   * How long before `grant` ends its refill is asked for: a fifth of its lifetime (a round trip
   * is milliseconds; asking earlier only makes more calls), or, for a subject whose requests are
   * further apart than that, twice the gap between them (gaps vary: at 1.25 gaps, a third either
   * way left about one request in a hundred to the store): the gap the last lifetime's demand
   * predicts, or the one seen since this lifetime began when requests have slowed down since.
   * A refill is asked for only while a request is being admitted, so the last request a grant
   * admits must ask for it: with a fixed fifth, a subject sending 4 or 5 requests a second (a
   * request every 200-250 ms) often had no request in the grant's last fifth, and its next
   * request, finding the grant ended, waited on the store. At most half the lifetime the list
   * is leased for: a quiet subject is not refilled at every request. A grant Redis gave a life shorter than
   * that gap (a token bucket's reservation joined to an earlier one) is refilled at its first
   * request.
   */
  #refillLeadMs(lease: Lease, grant: Grant, nowMs: number): number {
    const fifthMs = (grant.expiresAtMs - grant.grantedAtMs) / 5;
    const halfLifeMs = lease.lifeMs / 2;
    return Math.min(halfLifeMs, Math.max(fifthMs, 2 * this.#gapMs(lease, nowMs)));
  }

  /**
   * The gap between the subject's requests: the one the last lifetime's demand predicts, or the
   * one seen since this lifetime began when requests have slowed down since.
   */
  #gapMs(lease: Lease, nowMs: number): number {
    // A slow lease's pace is the one counted over its longer span.
    const isSlow = lease.lifeMs > this.#termsOf(lease.checks).lifeMs;
    const seenBefore = isSlow ? lease.slowSeenBefore : lease.seenBefore;
    const seen = isSlow ? lease.slowSeen : lease.seen;
    const sinceMs = isSlow ? lease.slowSeenSinceMs : lease.seenSinceMs;
    const gapMs = ((isSlow ? SLOW_LIVES : 1) * this.lifeMs) / Math.max(1, seenBefore);
    // `seen` requests since `sinceMs`, the first of them then: seen - 1 gaps so far.
    if (seen <= 1) return gapMs;
    return Math.max(gapMs, (nowMs - sinceMs) / (seen - 1));
  }

  /**
   * Once per grant, when what is left of its time falls within its refill lead: keeps what the
   * subject's pace says it will spend before the grant ends, and one request more, and gives the
   * rest back now. A grant is asked for at twice the demand so it outlasts the refill it
   * triggers; without this, the unspent half stayed reserved until the grant ended, which near
   * a limit rejects other gateways' requests (a window's last moments, where a dozen units held
   * by quiet gateways rejected a busy one's requests under the limit).
   */
  #trim(lease: Lease, grant: Grant, leftMs: number, cost: number, nowMs: number): void {
    grant.isTrimmed = true;
    const keep = Math.ceil(leftMs / this.#gapMs(lease, nowMs)) * cost + cost;
    const excess = Math.floor(grant.units - keep);
    if (excess >= 1) this.#giveBack(grant, excess, this.refillDelayMs);
  }

  /** The grant to spend now (ended or empty ones retired on the way), or null. */
  #liveGrant(lease: Lease, nowMs: number, returnDelayMs = this.refillDelayMs): Grant | null {
    let grant = lease.current;
    while (grant !== null && (nowMs >= grant.expiresAtMs || grant.units <= 0)) {
      this.#retire(grant, returnDelayMs);
      grant = lease.current;
    }
    return grant;
  }

  /**
   * Ends `grant` (the next one, if any, moves up): nothing is spent from it again, and its
   * unspent units go back to the store (held back at most `returnDelayMs` to travel with other
   * calls), or are counted expired without a returner. Once.
   */
  #retire(grant: Grant, returnDelayMs = this.refillDelayMs): void {
    if (grant.isRetired) return;
    grant.isRetired = true;
    const lease = grant.lease;
    if (lease.current === grant) {
      lease.current = lease.next;
      lease.next = null;
    } else if (lease.next === grant) {
      lease.next = null;
    }
    const units = grant.units;
    if (units > 0) this.#giveBack(grant, units, returnDelayMs);
  }

  /** Takes `units` off `grant` for good, and gives them back to the store (or counts them). */
  #giveBack(grant: Grant, units: number, returnDelayMs: number): void {
    grant.units -= units;
    const lease = grant.lease;
    const returner = this.#returner;
    if (returner === undefined) {
      this.#expiredUnits += units;
      return;
    }
    this.#returningUnits += units;
    returner.giveBack(
      { subject: lease.subject, checks: lease.checks, cost: units },
      {
        units,
        grantedAtMs: grant.storeAtMs,
        lifeMs: grant.storeLifeMs,
        maxDelayMs: returnDelayMs,
      },
      (taken) => {
        const back = Math.min(units, Math.max(0, Math.floor(taken)));
        this.#returningUnits -= units;
        this.#returnedUnits += back;
        this.#expiredUnits += units - back;
      },
    );
  }

  /** Keeps a sweep coming while grants are out. */
  #scheduleSweep(): void {
    if (this.#sweepTimer !== undefined) return;
    this.#sweepTimer = this.#timers.setTimer(() => {
      this.#sweepTimer = undefined;
      this.#sweep();
    }, SWEEP_INTERVAL_MS);
  }

  /** Retires every grant that has ended, spent or not (quiet subjects' grants end here). */
  #sweep(): void {
    const nowMs = this.#clock.nowMs();
    const byEnd = this.#byEnd;
    for (let grant = byEnd.peek(); grant !== undefined; grant = byEnd.peek()) {
      if (!grant.isRetired && grant.expiresAtMs > nowMs) break;
      byEnd.pop();
      this.#retire(grant);
    }
    if (byEnd.size > 0) this.#scheduleSweep();
  }
}

/**
 * Units a limit adds back per second once spent: a token bucket's refill, a window's limit per
 * window; 0 for what is never leased.
 */
function leasedRefillPerSec(limit: LimitSpec): number {
  switch (limit.algorithm) {
    case "token-bucket":
      return limit.refillPerSec;
    case "fixed-window":
    case "sliding-window":
      return (limit.limit * 1_000) / limit.windowMs;
    case "sliding-log":
    case "leaky-meter":
      return 0;
    default: {
      const unknown: never = limit;
      throw new TypeError(`unknown algorithm in ${JSON.stringify(unknown)}`);
    }
  }
}

/** Grants by the instant this table stops spending them, earliest first (a binary heap). */
class GrantHeap {
  readonly #grants: Grant[] = [];

  get size(): number {
    return this.#grants.length;
  }

  peek(): Grant | undefined {
    return this.#grants[0];
  }

  push(grant: Grant): void {
    const grants = this.#grants;
    let index = grants.length;
    grants.push(grant);
    while (index > 0) {
      const parent = (index - 1) >> 1;
      const above = grants[parent] as Grant;
      if (above.expiresAtMs <= grant.expiresAtMs) break;
      grants[index] = above;
      index = parent;
    }
    grants[index] = grant;
  }

  pop(): Grant | undefined {
    const grants = this.#grants;
    const top = grants[0];
    const last = grants.pop();
    if (top === undefined || last === undefined || grants.length === 0) return top;
    let index = 0;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= grants.length) break;
      const right = left + 1;
      let child = left;
      if (
        right < grants.length &&
        (grants[right] as Grant).expiresAtMs < (grants[left] as Grant).expiresAtMs
      ) {
        child = right;
      }
      const below = grants[child] as Grant;
      if (below.expiresAtMs >= last.expiresAtMs) break;
      grants[index] = below;
      index = child;
    }
    grants[index] = last;
    return top;
  }
}

/**
 * A request admitted from `grant`: each check's outcome as the store last reported it, less
 * what this lease has spent since (the units leased out are not counted in `remaining`).
 */
function localDecision(
  checks: readonly EnforcerCheck[],
  grant: Grant,
  nowMs: number,
): EnforcerDecision {
  const outcomes: EnforcerOutcome[] = new Array(checks.length);
  const elapsedMs = nowMs - grant.grantedAtMs;
  for (let i = 0; i < checks.length; i++) {
    const check = checks[i] as EnforcerCheck;
    const remaining = (grant.remaining[i] ?? 0) - grant.spent;
    outcomes[i] = {
      allowed: true,
      limit: limitSize(check.limit),
      remaining: remaining > 0 ? Math.floor(remaining) : 0,
      retryAfterMs: 0,
      resetAfterMs: Math.max(0, Math.ceil((grant.resetAfterMs[i] ?? 0) - elapsedMs)),
      reason: null,
      scope: check.scope,
      mode: check.mode,
      fallback: null,
    };
  }
  const decision = enforcerDecisionOf(outcomes, {
    source: "lease",
    degraded: false,
    failure: null,
  });
  if (grant.storeTime !== undefined) setStoreTime(decision, grant.storeTime);
  return decision;
}
