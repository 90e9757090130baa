/**
 * The hot path's memo of `resolveLimits`: identified customers without customer-specific rules
 * resolve to the same limits for the same tier and route for as long as a snapshot is in force
 * (their checks depend on the tier and the endpoint class only, and no incident can apply to
 * them: incidents are customer overrides). So the resolution is kept per (customer, tier,
 * endpoint class asked for, method, path) and reused until the snapshot changes: one map lookup
 * by customer and a few comparisons instead of matching the path, formatting the subject and
 * building the result on every request.
 *
 * Bounded (those unused longest first out), because paths and customers come from traffic. Cleared
 * whenever the snapshot in force is another object (a new version, a rollback, a bootstrap
 * replaced): a cached resolution never outlives the policy it was resolved under. Customers with
 * overrides and anonymous requests are never cached: their limits depend on the time (incidents)
 * or the client address.
 */

import { GenerationalMap } from "../collections/generational-map";
import type { PreparedSnapshot } from "../policy/prepare";
import { type Resolution, type ResolveRequest, resolveLimits } from "../policy/resolve";

export interface ResolutionCacheOptions {
  /**
   * Most resolutions held (one per customer, tier and route seen under the snapshot in force).
   * @default 10_000
   */
  readonly maxEntries?: number;
}

/** The fields `resolveLimits` reads, every one present: what a cache key is made of. */
export interface CachedResolveRequest extends ResolveRequest {
  readonly customerId: string | null;
  readonly tier: string | null;
  readonly method: string;
  readonly path: string;
  readonly clientAddress: string | null;
  readonly endpointClass: string | null;
}

/** One cached resolution of a customer: what it was resolved for, and the result. */
interface CachedEntry {
  readonly tier: string | null;
  readonly endpointClass: string | null;
  readonly method: string;
  readonly path: string;
  readonly resolution: Resolution;
}

/**
 * Most routes (tier, endpoint class, method, path) kept per customer; a new one beyond replaces
 * the oldest. A customer's entries are scanned, so this stays small.
 */
const ROUTES_PER_CUSTOMER = 8;

export class ResolutionCache {
  /**
   * Entries by customer id, weighed by their count: no key string is built per request, the
   * customer id is looked up as it came (its hash computed once per request and shared with the
   * other maps keyed by it), then a handful of entries are compared field by field.
   */
  readonly #entries: GenerationalMap<string, CachedEntry[]>;
  #snapshot: PreparedSnapshot | null = null;
  #hitCount = 0;

  constructor(options: ResolutionCacheOptions = {}) {
    const maxEntries = options.maxEntries ?? 10_000;
    if (!Number.isInteger(maxEntries) || maxEntries < 1) {
      throw new RangeError(
        `resolutionCache.maxEntries must be a whole number >= 1, got ${maxEntries}`,
      );
    }
    this.#entries = new GenerationalMap({ maxWeight: maxEntries, weightOf: (e) => e.length });
  }

  /** Resolutions held now; at most `maxEntries`. */
  get size(): number {
    return this.#entries.weight;
  }

  /** Requests answered from the cache since it was made (for tests and status). */
  get hitCount(): number {
    return this.#hitCount;
  }

  /**
   * The cached resolution of `request` under `snapshot`, or undefined when there is none (then
   * {@link resolveAndKeep} it). A hit was resolved for a valid customer id, under this snapshot.
   */
  cached(snapshot: PreparedSnapshot, request: CachedResolveRequest): Resolution | undefined {
    const { customerId } = request;
    if (customerId === null) {
      this.#isNewSnapshot(snapshot);
      return undefined;
    }
    return this.cachedFor(
      snapshot,
      customerId,
      request.tier,
      request.method,
      request.path,
      request.endpointClass,
    );
  }

  /**
   * {@link cached} for a customer's request given field by field: the hot path's lookup, which
   * makes no request object when the answer is cached.
   */
  cachedFor(
    snapshot: PreparedSnapshot,
    customerId: string,
    tier: string | null,
    method: string,
    path: string,
    endpointClass: string | null,
  ): Resolution | undefined {
    if (this.#isNewSnapshot(snapshot)) return undefined;
    const entries = this.#entries.get(customerId);
    if (entries === undefined) return undefined;
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i] as CachedEntry;
      if (
        entry.path === path &&
        entry.method === method &&
        entry.tier === tier &&
        entry.endpointClass === endpointClass
      ) {
        this.#hitCount++;
        return entry.resolution;
      }
    }
    return undefined;
  }

  /**
   * `resolveLimits(snapshot, request, wallNowMs, { trace: false })`, from the cache when it can
   * be, and kept for the next request of the same customer and route when it may be.
   */
  resolve(
    snapshot: PreparedSnapshot,
    request: CachedResolveRequest,
    wallNowMs: number,
  ): Resolution {
    return this.cached(snapshot, request) ?? this.resolveAndKeep(snapshot, request, wallNowMs);
  }

  /**
   * `resolveLimits(snapshot, request, wallNowMs, { trace: false })`, kept for the next request of
   * the same customer and route when it may be, without looking in the cache first: for a caller
   * that just did ({@link cached} answered undefined).
   */
  resolveAndKeep(
    snapshot: PreparedSnapshot,
    request: CachedResolveRequest,
    wallNowMs: number,
  ): Resolution {
    this.#isNewSnapshot(snapshot);
    const { customerId } = request;
    if (customerId === null) return resolveLimits(snapshot, request, wallNowMs, NO_TRACE);
    const entries = this.#entries.get(customerId);
    // Throws on an invalid customer id, which is then not cached either.
    const resolution = resolveLimits(snapshot, request, wallNowMs, NO_TRACE);
    if (snapshot.customers.get(customerId) !== undefined) return resolution;
    const entry: CachedEntry = {
      tier: request.tier,
      endpointClass: request.endpointClass,
      method: request.method,
      path: request.path,
      resolution,
    };
    if (entries === undefined) {
      this.#entries.set(customerId, [entry]);
    } else if (entries.length >= ROUTES_PER_CUSTOMER) {
      entries.shift();
      entries.push(entry);
    } else {
      // Taken out and put back grown, so its weight is counted again.
      this.#entries.delete(customerId);
      entries.push(entry);
      this.#entries.set(customerId, entries);
    }
    return resolution;
  }

  /** Empties the cache when `snapshot` is another than the one its entries were resolved under. */
  #isNewSnapshot(snapshot: PreparedSnapshot): boolean {
    if (snapshot === this.#snapshot) return false;
    this.#entries.clear();
    this.#snapshot = snapshot;
    return true;
  }
}

const NO_TRACE = { trace: false } as const;
