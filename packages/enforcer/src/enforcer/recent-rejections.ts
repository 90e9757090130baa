/**
 * A bounded, expiring record of each customer's recent rejections, for the console.
 */
import type { Clock } from "../limiter/clock";
import { monotonicClock, wallClock } from "../limiter/clock";
import { BoundedLru } from "./lru";

/** One rejection of a customer's request, as the console lists it. */
export interface RecentRejection {
  /** Wall-clock time, epoch milliseconds. */
  readonly atMs: number;
  readonly scope: string;
  /** The endpoint class, or null when the gateway did not know it. */
  readonly endpointClass: string | null;
}

export interface CustomerRejection extends RecentRejection {
  readonly customerId: string;
}

interface StoredRejection extends RecentRejection {
  /** On the monotonic clock. */
  readonly expiresAtMs: number;
}

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
  readonly #pending: (CustomerRejection | undefined)[];
  #pendingStart = 0;
  #pendingCount = 0;
  #droppedCount = 0;

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
    this.#pending = new Array<CustomerRejection | undefined>(this.#maxPending);
  }

  get customerCount(): number {
    return this.#byCustomer.size;
  }

  /** Rejections dropped before a drain because `maxPending` was reached. */
  get droppedCount(): number {
    return this.#droppedCount;
  }

  /** Records that `customerId`'s request was rejected by `scope`. */
  record(customerId: string, scope: string, endpointClass: string | null): void {
    // Built without spreads: this runs for every rejection.
    const atMs = this.#wallClock.nowMs();
    const stored: StoredRejection = {
      atMs,
      scope,
      endpointClass,
      expiresAtMs: this.#clock.nowMs() + this.#ttlMs,
    };
    const list = this.#byCustomer.get(customerId);
    if (list === undefined) {
      this.#byCustomer.set(customerId, [stored]);
    } else {
      list.push(stored);
      if (list.length > this.#maxPerCustomer) list.shift();
    }
    this.#enqueue({ customerId, atMs, scope, endpointClass });
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
    return live.map(({ atMs, scope, endpointClass }) => ({ atMs, scope, endpointClass })).reverse();
  }

  /** Rejections recorded since the last drain, oldest first; forgets them. */
  drain(): readonly CustomerRejection[] {
    const drained: CustomerRejection[] = [];
    for (let offset = 0; offset < this.#pendingCount; offset++) {
      const index = (this.#pendingStart + offset) % this.#maxPending;
      const rejection = this.#pending[index];
      if (rejection !== undefined) drained.push(rejection);
      this.#pending[index] = undefined;
    }
    this.#pendingStart = 0;
    this.#pendingCount = 0;
    return drained;
  }

  #enqueue(rejection: CustomerRejection): void {
    if (this.#pendingCount === this.#maxPending) {
      this.#pending[this.#pendingStart] = rejection;
      this.#pendingStart = (this.#pendingStart + 1) % this.#maxPending;
      this.#droppedCount++;
      return;
    }
    this.#pending[(this.#pendingStart + this.#pendingCount) % this.#maxPending] = rejection;
    this.#pendingCount++;
  }
}
