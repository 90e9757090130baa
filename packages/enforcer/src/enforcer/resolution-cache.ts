/**
 * The hot path's memo of `resolveLimits`: identified customers without customer-specific rules
 * resolve to the same limits for the same tier and route for as long as a snapshot is in force
 * (their checks depend on the tier and the endpoint class only, and no incident can apply to
 * them: incidents are customer overrides). So the resolution is kept per (customer, tier,
 * endpoint class asked for, method, path) and reused until the snapshot changes: a string key
 * and one map lookup instead of matching the path, formatting the subject and building the
 * result on every request.
 *
 * Bounded (least recently used first out), because paths and customers come from traffic. Cleared
 * whenever the snapshot in force is another object (a new version, a rollback, a bootstrap
 * replaced): a cached resolution never outlives the policy it was resolved under. Customers with
 * overrides and anonymous requests are never cached: their limits depend on the time (incidents)
 * or the client address.
 */
import type { PreparedSnapshot } from "../policy/prepare";
import { type Resolution, type ResolveRequest, resolveLimits } from "../policy/resolve";
import { BoundedLru } from "./lru";

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

export class ResolutionCache {
  readonly #entries: BoundedLru<string, Resolution>;
  #snapshot: PreparedSnapshot | null = null;
  #hitCount = 0;

  constructor(options: ResolutionCacheOptions = {}) {
    const maxEntries = options.maxEntries ?? 10_000;
    if (!Number.isInteger(maxEntries) || maxEntries < 1) {
      throw new RangeError(
        `resolutionCache.maxEntries must be a whole number >= 1, got ${maxEntries}`,
      );
    }
    this.#entries = new BoundedLru(maxEntries);
  }

  /** Resolutions held now; at most `maxEntries`. */
  get size(): number {
    return this.#entries.size;
  }

  /** Requests answered from the cache since it was made (for tests and status). */
  get hitCount(): number {
    return this.#hitCount;
  }

  /**
   * `resolveLimits(snapshot, request, wallNowMs(), { trace: false })`, from the cache when it
   * can be. `wallNowMs` is read only when the resolution is computed.
   */
  resolve(
    snapshot: PreparedSnapshot,
    request: CachedResolveRequest,
    wallNowMs: () => number,
  ): Resolution {
    if (snapshot !== this.#snapshot) {
      this.#entries.clear();
      this.#snapshot = snapshot;
    }
    const { customerId } = request;
    if (customerId === null) return resolveLimits(snapshot, request, wallNowMs(), NO_TRACE);
    const key = keyOf(customerId, request);
    const cached = this.#entries.get(key);
    if (cached !== undefined) {
      this.#hitCount++;
      return cached;
    }
    // Throws on an invalid customer id, which is then not cached either.
    const resolution = resolveLimits(snapshot, request, wallNowMs(), NO_TRACE);
    if (snapshot.customers.get(customerId) === undefined) this.#entries.set(key, resolution);
    return resolution;
  }
}

const NO_TRACE = { trace: false } as const;

/**
 * Customer ids never hold a NUL (their character set excludes it); tier, endpoint class and
 * method are length-prefixed and the path comes last, so no two requests share a key.
 */
function keyOf(customerId: string, request: CachedResolveRequest): string {
  const tier = request.tier ?? "";
  const endpointClass = request.endpointClass ?? "";
  return `${customerId}\u0000${request.tier === null ? "-" : `${tier.length}:${tier}`}${request.endpointClass === null ? "-" : `${endpointClass.length}:${endpointClass}`}${request.method.length}:${request.method}${request.path}`;
}
