/**
 * Leases: a slice of a subject's budget reserved in the shared store for this gateway alone,
 * spent here without a network call (issue 19; the seed's "explicitly divide its budget among
 * instances" and "local buckets plus reconciliation" are the two ends of it).
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
 *   for every snapshot, and the table is emptied when the snapshot changes, so a lowered limit is
 *   never spent at its old size.
 * - The cost: units leased here and not spent are unavailable to other gateways until the lease
 *   ends; a request elsewhere may be rejected slightly early. That is bounded (a grant is at most half of what is left, and at most `maxUnits`) and
 *   counted: `expiredUnits` are the units that ended unspent.
 * - Demand first: a list is leased only once this gateway has seen it at least 4 times over the
 *   last whole lifetime (2, for a list leased within the last lifetime), and asks for about twice
 *   that, so a quiet subject (or the first burst of a new one) holds nothing and a busy one rarely
 *   waits on the store. The next grant is asked for while the last request this one can admit is
 *   being admitted, judged by the gap between the subject's requests.
 * - Refills travel together: the store may hold a refill back for a fiftieth of the lifetime (at
 *   most 20 ms) to send it with other calls, so a thousand busy subjects cost a few dozen round
 *   trips a second rather than a thousand. A request's own store call is never held back.
 */
import type { Clock } from "../limiter/clock";
import { monotonicClock } from "../limiter/clock";
import { type StoreTime, setStoreTime, storeTimeOf } from "../limiter/stores/store-time";
import { limitSize } from "../policy/limit-math";
import { GenerationalMap } from "./generational-map";
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
   * Longest lifetime of a lease in ms. A window's lease also ends with the window, and a token
   * bucket's may end with the reservation it joins (see the decide script).
   * @default 1_000
   */
  readonly lifeMs?: number;
  /**
   * Most subjects holding leases; those unused longest are dropped, their units counted expired.
   * @default 10_000
   */
  readonly maxEntries?: number;
  /** @default monotonicClock */
  readonly clock?: Clock;
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
 * A refill may wait this share of the lifetime (at most {@link MAX_REFILL_DELAY_MS}) for other
 * store calls to travel with: it is asked for with a fifth of the lifetime still to run, or half
 * the units still to spend, so the wait costs the lease nothing it needs. Refills of a thousand
 * busy subjects come a few a millisecond; held back 20 ms, a few dozen share one round trip
 * instead of each taking its own.
 */
const REFILL_DELAY_SHARE = 1 / 50;
const MAX_REFILL_DELAY_MS = 20;

const NO_LEASE: LeaseRequest = Object.freeze({ units: 0, lifeMs: 0 });

/** Asks the store for more units of a lease, off the request's path (the runtime). */
export interface LeaseRefiller {
  refill(input: EnforcerInput, lease: LeaseRequest): void;
}

/** One grant: units to spend until `expiresAtMs`, and what the store said was left besides. */
interface Grant {
  units: number;
  readonly expiresAtMs: number;
  /** Per check, the store's `remaining` after the request that came with the grant. */
  readonly remaining: readonly number[];
  readonly resetAfterMs: readonly number[];
  readonly grantedAtMs: number;
  spent: number;
  /**
   * When Redis charged the units (`store-time.ts`): what a leased admission reports as its
   * time and order, for the traffic record, so a backtest replays it where Redis counted it.
   */
  readonly storeTime: StoreTime | undefined;
}

/** A subject's lease on one list of checks. */
interface Lease {
  readonly checks: readonly EnforcerCheck[];
  /** The grant being spent, then the one that came after it (a refill asked for in advance). */
  current: Grant | null;
  next: Grant | null;
  /** Requests seen since `seenSinceMs`, and over the lifetime before. */
  seen: number;
  seenSinceMs: number;
  seenBefore: number;
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
  /** Units whose lease ended (or was dropped) before they were spent. */
  readonly expiredUnits: number;
  /** Subjects holding leases now. */
  readonly subjects: number;
  /** Store calls asking for a lease that have not been answered yet. */
  readonly inFlight: number;
}

export class LeaseTable {
  readonly maxUnits: number;
  readonly lifeMs: number;
  /** How long a refill may be held back by the store (see {@link REFILL_DELAY_SHARE}). */
  readonly refillDelayMs: number;
  readonly #clock: Clock;
  readonly #keepsStoreTime: boolean;
  /** Leases by subject; subjects unused for a whole generation are dropped, units counted expired. */
  readonly #bySubject: GenerationalMap<string, Lease[]>;
  #admitted = 0;
  #grantedUnits = 0;
  #expiredUnits = 0;
  /** Units granted and neither spent nor expired. */
  #heldUnits = 0;
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
    this.refillDelayMs = Math.min(
      MAX_REFILL_DELAY_MS,
      Math.floor(this.lifeMs * REFILL_DELAY_SHARE),
    );
    const maxEntries = options.maxEntries ?? 10_000;
    if (!(Number.isInteger(maxEntries) && maxEntries >= 2)) {
      throw new RangeError(`leases.maxEntries must be a whole number >= 2, got ${maxEntries}`);
    }
    this.#bySubject = new GenerationalMap({
      maxWeight: maxEntries,
      onDrop: (leases) => {
        for (const lease of leases) {
          const units = (lease.current?.units ?? 0) + (lease.next?.units ?? 0);
          this.#expiredUnits += units;
          this.#heldUnits -= units;
        }
      },
    });
    this.#clock = options.clock ?? monotonicClock;
    this.#keepsStoreTime = options.keepsStoreTime === true;
  }

  figures(): LeaseFigures {
    return {
      admitted: this.#admitted,
      grantedUnits: this.#grantedUnits,
      expiredUnits: this.#expiredUnits,
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
   * or ends. `isNewRequest`
   * false: a request already counted (the store rejected it), not counted again.
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
    let grant = this.#liveGrant(lease, nowMs);
    if (grant !== null && grant.units < cost && lease.next !== null) {
      // What is left of the older grant cannot pay for this request: the newer one does.
      this.#expire(lease, grant);
      grant = this.#liveGrant(lease, nowMs);
    }
    if (grant === null || grant.units < cost) return null;
    grant.units -= cost;
    grant.spent += cost;
    this.#heldUnits -= cost;
    this.#admitted++;
    if (
      !lease.isRefilling &&
      lease.next === null &&
      (grant.units < grant.spent ||
        grant.expiresAtMs - nowMs <= this.#refillLeadMs(lease, grant, nowMs))
    ) {
      const wanted = this.#wanted(lease, nowMs);
      if (wanted > 0) {
        lease.isRefilling = true;
        this.#inFlight++;
        refiller.refill(input, {
          units: wanted,
          lifeMs: this.lifeMs,
          maxDelayMs: this.refillDelayMs,
        });
      }
    }
    return localDecision(input.checks, grant, nowMs);
  }

  /**
   * What a store call for `input` should lease: nothing until this gateway has seen the list at
   * least 4 times over the last whole lifetime, or while a refill is in flight; then about twice
   * that, at most `maxUnits`.
   */
  want(input: EnforcerInput): LeaseRequest {
    if (!isLeasable(input.checks)) return NO_LEASE;
    const nowMs = this.#clock.nowMs();
    let lease = this.#leaseOf(input.subject, input.checks);
    if (lease === null) {
      lease = this.#newLease(input.subject, input.checks, nowMs);
      lease.seen = 1;
      return NO_LEASE;
    }
    // `take` counted this request already when it found the lease.
    if (lease.isRefilling) return NO_LEASE;
    const wanted = this.#wanted(lease, nowMs);
    if (wanted === 0) return NO_LEASE;
    lease.isRefilling = true;
    this.#inFlight++;
    return { units: wanted, lifeMs: this.lifeMs };
  }

  /**
   * The store's grant for `input`'s checks (0 units: none), `sentAtMs` read on this table's
   * clock before the call was sent. Ends the refill in flight. Called once for every lease
   * asked for ({@link want} or a refill), or {@link refillFailed} instead.
   */
  granted(
    input: EnforcerInput,
    decision: EnforcerDecision,
    units: number,
    lifeMs: number,
    sentAtMs: number,
  ): void {
    this.#inFlight--;
    const lease = this.#leaseOf(input.subject, input.checks);
    if (lease === null) {
      // Dropped meanwhile (evicted, or the table emptied by a new snapshot): the units are lost.
      this.#grantedUnits += units;
      this.#expiredUnits += units;
      return;
    }
    lease.isRefilling = false;
    if (!(units > 0 && lifeMs > 0)) return;
    this.#grantedUnits += units;
    this.#heldUnits += units;
    const grant: Grant = {
      units,
      expiresAtMs: sentAtMs + lifeMs,
      remaining: decision.outcomes.map((outcome) => outcome.remaining),
      resetAfterMs: decision.outcomes.map((outcome) => outcome.resetAfterMs),
      grantedAtMs: sentAtMs,
      spent: 0,
      storeTime: this.#keepsStoreTime ? storeTimeOf(decision) : undefined,
    };
    if (grant.expiresAtMs > lease.leasedUntilMs) lease.leasedUntilMs = grant.expiresAtMs;
    const nowMs = this.#clock.nowMs();
    this.#liveGrant(lease, nowMs);
    if (lease.current === null) lease.current = grant;
    else {
      if (lease.next !== null) this.#expire(lease, lease.current);
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

  /** Drops every lease (a new policy snapshot): their units are counted expired. */
  clear(): void {
    this.#expiredUnits += this.#heldUnits;
    this.#heldUnits = 0;
    this.#bySubject.clear();
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
      checks,
      current: null,
      next: null,
      seen: 0,
      seenSinceMs: nowMs,
      seenBefore: 0,
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

  #countDemand(lease: Lease, nowMs: number): void {
    if (nowMs - lease.seenSinceMs >= this.lifeMs) {
      // A whole lifetime or more has passed: what it saw becomes the last lifetime's demand
      // (nothing, if more than one passed).
      lease.seenBefore = nowMs - lease.seenSinceMs < 2 * this.lifeMs ? lease.seen : 0;
      lease.seen = 0;
      lease.seenSinceMs = nowMs;
    }
    lease.seen++;
  }

  /**
   * About twice what the last whole lifetime saw, so a grant outlasts the refill it triggers;
   * nothing below MIN_DEMAND. Only whole lifetimes count: a burst on a quiet subject (a client's
   * first few requests at once) is never leased, so it is decided by the store exactly as without
   * leases, and no units are left unspent behind it.
   */
  #wanted(lease: Lease, nowMs: number): number {
    const least = nowMs < lease.leasedUntilMs + this.lifeMs ? KEEP_DEMAND : MIN_DEMAND;
    if (lease.seenBefore < least) return 0;
    return Math.min(this.maxUnits, 2 * lease.seenBefore);
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
   * request, finding the grant ended, waited on the store. At most half the table's lifetime:
   * a quiet subject is not refilled at every request. A grant Redis gave a life shorter than
   * that gap (a token bucket's reservation joined to an earlier one) is refilled at its first
   * request.
   */
  #refillLeadMs(lease: Lease, grant: Grant, nowMs: number): number {
    let gapMs = this.lifeMs / Math.max(1, lease.seenBefore);
    // `seen` requests since `seenSinceMs`, the first of them then: seen - 1 gaps so far.
    if (lease.seen > 1) gapMs = Math.max(gapMs, (nowMs - lease.seenSinceMs) / (lease.seen - 1));
    const fifthMs = (grant.expiresAtMs - grant.grantedAtMs) / 5;
    return Math.min(this.lifeMs / 2, Math.max(fifthMs, 2 * gapMs));
  }

  /** The grant to spend now (expired ones dropped on the way), or null. */
  #liveGrant(lease: Lease, nowMs: number): Grant | null {
    let grant = lease.current;
    while (grant !== null && (nowMs >= grant.expiresAtMs || grant.units <= 0)) {
      this.#expire(lease, grant);
      grant = lease.current;
    }
    return grant;
  }

  /** Ends `grant` (the current one), counting what it left unspent; the next one moves up. */
  #expire(lease: Lease, grant: Grant): void {
    this.#expiredUnits += grant.units;
    this.#heldUnits -= grant.units;
    grant.units = 0;
    lease.current = lease.next;
    lease.next = null;
  }
}

/**
 * Whether the list is leased: every check enforced (a dry-run limit's would-rejects stay exactly
 * what the store counts, which a lease's local admissions could not reproduce) and of an
 * algorithm the store leases (never a sliding log or a leaky meter).
 */
const leasable = new WeakMap<readonly EnforcerCheck[], boolean>();

function isLeasable(checks: readonly EnforcerCheck[]): boolean {
  const known = leasable.get(checks);
  if (known !== undefined) return known;
  const result =
    checks.length > 0 &&
    checks.every(
      (check) =>
        check.mode === "enforce" &&
        check.limit.algorithm !== "sliding-log" &&
        check.limit.algorithm !== "leaky-meter",
    );
  leasable.set(checks, result);
  return result;
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
