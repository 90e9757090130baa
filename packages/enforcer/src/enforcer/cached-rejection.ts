/**
 * The rejection flood's fast path, between an enforcer and the Node middleware: when a cached
 * denial alone rejects an identified customer's request, and the 429 for it is kept, the
 * middleware writes that 429 without a decision or result object being made (a flood of
 * rejections is the workload a limiter exists to absorb; the full result costs about 0.8 kB a
 * request, this path only the body's text).
 *
 * Kept off the public types on purpose: an enforcer registers its rejecter here when it is made,
 * and the middleware looks it up for the checker it was given. Any other `RequestChecker` simply
 * has none, and every request goes through `checkNow`.
 */

/** Where a rejecter puts the 429 it answers with; the caller writes it at once and reuses it. */
export interface CachedRejectionSink {
  /** Node's flat list of header names and values, `Content-Length` first. */
  rawHeaders: readonly string[];
  bodyText: string;
}

/**
 * Counts and records the rejection exactly as `checkNow` would, fills `into` and answers true;
 * false when the fast path does not apply (the caller then calls `checkNow`).
 */
export type CachedRejecter = (
  customerId: string,
  tier: string | null,
  method: string,
  path: string,
  endpointClass: string | null,
  cost: number | undefined,
  into: CachedRejectionSink,
) => boolean;

const rejecters = new WeakMap<object, CachedRejecter>();

export function registerCachedRejecter(checker: object, rejecter: CachedRejecter): void {
  rejecters.set(checker, rejecter);
}

export function cachedRejecterOf(checker: object): CachedRejecter | undefined {
  return rejecters.get(checker);
}
