/**
 * A bounded, expiring record of each customer's recent rejections, for the console. Rejections of
 * one customer by one limit within a second of each other are one entry with a count (a client
 * hammering past its limit is one line a second, not thousands), so recording a rejection usually
 * allocates nothing.
 */
import type { Clock } from "../limiter/clock";
import { monotonicClock, wallClock } from "../limiter/clock";
import { BoundedLru } from "./lru";

/** Rejections of a customer's requests by one limit, as the console lists them. */
export interface RecentRejection {
  /** The latest one's wall-clock time, epoch milliseconds. */
  readonly atMs: number;
  /** The first one's; `atMs` when there was one. */
  readonly firstAtMs: number;
  /** How many, from `firstAtMs` to `atMs` (at most COALESCE_MS apart). */
  readonly count: number;
  readonly scope: string;
  /** The endpoint class, or null when the gateway did not know it. */
  readonly endpointClass: string | null;
}

export interface CustomerRejection extends RecentRejection {
  readonly customerId: string;
}

/** Rejections of requests without a customer by one limit in one minute. */
export interface AnonymousRejections {
  readonly epochMinute: number;
  readonly scope: string;
  readonly count: number;
}

/** An entry as kept: counted on until it is a second old or handed to the flusher. */
interface StoredRejection {
  readonly customerId: string;
  readonly scope: string;
  readonly endpointClass: string | null;
  readonly firstAtMs: number;
  atMs: number;
  count: number;
  /** On the monotonic clock: its first rejection's time plus the listing time. */
  readonly expiresAtMs: number;
  /** Drained (handed to the flusher): a later rejection starts a new entry. */
  isDrained: boolean;
}

/** Rejections by one limit within this long of the first are counted in one entry. */
export const COALESCE_MS = 1_000;

export interface RecentRejectionsOptions {
  /** Most customers remembered; the least recently rejected is forgotten. @default 10_000 */
  readonly maxCustomers?: number;
  /** Most rejections kept per customer; the oldest go first. @default 20 */
  readonly maxPerCustomer?: number;
  /** How long a rejection is listed. @default 900_000 (15 minutes) */
  readonly ttlMs?: number;
  /**
   * Most rejections waiting for `drain`; beyond it the oldest are dropped (and counted), so a
   * stalled flusher cannot grow the process.
   * @default 10_000
   */
  readonly maxPending?: number;
  /** Measures the expiry. @default monotonicClock */
  readonly clock?: Clock;
  /** Stamps `atMs`. @default wallClock */
  readonly wallClock?: Clock;
}

/**
 * A bounded, expiring record of each customer's recent rejections (customers only: anonymous
 * traffic is keyed by address, which the console does not list). Bounded three ways: customers
 * (LRU), rejections per customer, and rejections waiting for the flusher.
 */
export class RecentRejections {
  readonly #byCustomer: BoundedLru<string, StoredRejection[]>;
  readonly #maxPerCustomer: number;
  readonly #ttlMs: number;
  readonly #maxPending: number;
  readonly #clock: Clock;
  readonly #wallClock: Clock;
  /** A ring: `#pendingStart` is the oldest; `#pendingCount` entries follow it. */
  readonly #pending: (StoredRejection | undefined)[];
  #pendingStart = 0;
  #pendingCount = 0;
  #droppedCount = 0;
  /**
   * Anonymous rejections (no customer: keyed by address, which is never reported) counted per
   * minute and limit, `<epochMinute>|<scope>`, until the next drain. Bounded like the pending
   * ring: a new key past `maxPending` is dropped and counted as such.
   */
  readonly #anonymous = new Map<string, number>();

  constructor(options: RecentRejectionsOptions = {}) {
    this.#byCustomer = new BoundedLru(options.maxCustomers ?? 10_000);
    this.#maxPerCustomer = options.maxPerCustomer ?? 20;
    this.#ttlMs = options.ttlMs ?? 900_000;
    this.#maxPending = options.maxPending ?? 10_000;
    this.#clock = options.clock ?? monotonicClock;
    this.#wallClock = options.wallClock ?? wallClock;
    if (!(Number.isInteger(this.#maxPerCustomer) && this.#maxPerCustomer >= 1)) {
      throw new RangeError(`maxPerCustomer must be a whole number >= 1`);
    }
    if (!(this.#ttlMs > 0)) throw new RangeError(`ttlMs must be > 0, got ${this.#ttlMs}`);
    if (!(Number.isInteger(this.#maxPending) && this.#maxPending >= 1)) {
      throw new RangeError(`maxPending must be a whole number >= 1`);
    }
    this.#pending = new Array<StoredRejection | undefined>(this.#maxPending);
  }

  get customerCount(): number {
    return this.#byCustomer.size;
  }

  /** Rejections dropped before a drain because `maxPending` was reached. */
  get droppedCount(): number {
    return this.#droppedCount;
  }

  /**
   * Records that `customerId`'s request was rejected by `scope`, at `wallNowMs` (the wall clock's
   * reading, when the caller has read it already): counted in the customer's latest entry when
   * that is for the same limit and endpoint class, less than COALESCE_MS old and not drained yet,
   * else a new entry.
   */
  record(
    customerId: string,
    scope: string,
    endpointClass: string | null,
    wallNowMs?: number,
  ): void {
    const atMs = wallNowMs ?? this.#wallClock.nowMs();
    const list = this.#byCustomer.get(customerId);
    const latest = list?.[list.length - 1];
    if (
      latest !== undefined &&
      !latest.isDrained &&
      latest.scope === scope &&
      latest.endpointClass === endpointClass &&
      atMs >= latest.atMs &&
      atMs - latest.firstAtMs < COALESCE_MS
    ) {
      latest.count++;
      latest.atMs = atMs;
      return;
    }
    // Built without spreads: this runs for every new entry.
    const stored: StoredRejection = {
      customerId,
      scope,
      endpointClass,
      firstAtMs: atMs,
      atMs,
      count: 1,
      expiresAtMs: this.#clock.nowMs() + this.#ttlMs,
      isDrained: false,
    };
    if (list === undefined) {
      this.#byCustomer.set(customerId, [stored]);
    } else {
      list.push(stored);
      if (list.length > this.#maxPerCustomer) list.shift();
    }
    this.#enqueue(stored);
  }

  /**
   * Counts a rejection of a request without a customer by `scope` in its minute: the console
   * ranks anonymous traffic per limit, and no address is kept or reported.
   */
  recordAnonymous(scope: string, wallNowMs?: number): void {
    const minute = Math.floor((wallNowMs ?? this.#wallClock.nowMs()) / 60_000);
    const key = `${minute}|${scope}`;
    const count = this.#anonymous.get(key);
    if (count !== undefined) this.#anonymous.set(key, count + 1);
    else if (this.#anonymous.size < this.#maxPending) this.#anonymous.set(key, 1);
    else this.#droppedCount++;
  }

  /** The anonymous counts since the last drain, per minute and limit; forgets them. */
  drainAnonymous(): readonly AnonymousRejections[] {
    const drained: AnonymousRejections[] = [];
    for (const [key, count] of this.#anonymous) {
      const separator = key.indexOf("|");
      drained.push({
        epochMinute: Number(key.slice(0, separator)),
        scope: key.slice(separator + 1),
        count,
      });
    }
    this.#anonymous.clear();
    return drained;
  }

  /** The customer's unexpired rejections, newest first. */
  recent(customerId: string): readonly RecentRejection[] {
    const list = this.#byCustomer.peek(customerId);
    if (list === undefined) return [];
    const nowMs = this.#clock.nowMs();
    const live = list.filter((rejection) => rejection.expiresAtMs > nowMs);
    if (live.length === 0) {
      this.#byCustomer.delete(customerId);
      return [];
    }
    if (live.length !== list.length) this.#byCustomer.set(customerId, live);
    return live.map(publicRejection).reverse();
  }

  /**
   * Entries made since the last drain, oldest first, with their counts so far; forgets them
   * (a rejection after this starts a new entry, so none is counted twice).
   */
  drain(): readonly CustomerRejection[] {
    const drained: CustomerRejection[] = [];
    for (let offset = 0; offset < this.#pendingCount; offset++) {
      const index = (this.#pendingStart + offset) % this.#maxPending;
      const rejection = this.#pending[index];
      if (rejection !== undefined) {
        rejection.isDrained = true;
        drained.push({ customerId: rejection.customerId, ...publicRejection(rejection) });
      }
      this.#pending[index] = undefined;
    }
    this.#pendingStart = 0;
    this.#pendingCount = 0;
    return drained;
  }

  #enqueue(rejection: StoredRejection): void {
    if (this.#pendingCount === this.#maxPending) {
      // The oldest is dropped: counted as such, and no longer counted on.
      const dropped = this.#pending[this.#pendingStart];
      if (dropped !== undefined) dropped.isDrained = true;
      this.#pending[this.#pendingStart] = rejection;
      this.#pendingStart = (this.#pendingStart + 1) % this.#maxPending;
      this.#droppedCount++;
      return;
    }
    this.#pending[(this.#pendingStart + this.#pendingCount) % this.#maxPending] = rejection;
    this.#pendingCount++;
  }
}

function publicRejection(stored: StoredRejection): RecentRejection {
  return {
    atMs: stored.atMs,
    firstAtMs: stored.firstAtMs,
    count: stored.count,
    scope: stored.scope,
    endpointClass: stored.endpointClass,
  };
}
