/**
 * Floating-point tolerances and rounding shared by every algorithm, so that the numbers a caller
 * reads agree with the decisions the algorithms make.
 *
 * Costs, rates and elapsed times are doubles, and 0.1 of a token is not exact in binary: a balance
 * meant to be 1 can come out as 0.9999999999999999. Three tolerances absorb that noise:
 * - `UNIT_TOLERANCE`: a request fits when `cost <= available + UNIT_TOLERANCE`, and `remaining`
 *   rounds `available + UNIT_TOLERANCE` down, so `remaining >= cost` exactly when an integer cost
 *   would be admitted. It can admit at most 1e-9 units more than exact arithmetic, per admission:
 *   nothing an integer-cost caller can observe. (For budgets beyond about 1e6 units, double noise
 *   exceeds it and `remaining` may read one lower than exact; decisions stay consistent.)
 * - `MS_TOLERANCE`: a wait that comes out as 50.00000000000001 ms reports 50, not 51.
 * - `timeNoiseMs`: states holding one absolute instant (leaky meter, shaper) are evaluated a few
 *   units in the last place after `nowMs`, so rounding of that instant cannot reject a fit.
 *
 * Waits are whole milliseconds, rounded up. Each algorithm then checks its `retryAfterMs` by
 * evaluating itself at exactly `nowMs + retryAfterMs` against the state it just wrote, adding a
 * millisecond while the request would still not fit. That check is what guarantees a retry at that
 * instant is admitted when nothing else competed, whatever rounding happened on the way (for
 * example `nowMs + retryAfterMs` itself rounding to the 2^-12 ms grid of today's epoch times).
 */

/** Units of cost below which a shortfall is treated as rounding noise. */
export const UNIT_TOLERANCE = 1e-9;

/** Milliseconds below which an excess over a whole millisecond is treated as rounding noise. */
export const MS_TOLERANCE = 1e-6;

/**
 * Round-off in an absolute instant near `nowMs`, with margin. The leaky meter and shaper keep one
 * absolute instant per key, and every write rounds it to the doubles near `nowMs`: a grid of
 * 2^-12 ms around today's epoch milliseconds. Two such roundings (a clamp, then an admission)
 * could otherwise make a meter that should have exactly `cost` units of room read a few millionths
 * short and reject. They evaluate themselves this much after `nowMs` (8 to 16 units in the last
 * place of `nowMs`: about 3 µs today, nothing near 0), which absorbs a few roundings and is far
 * below anything a caller can observe.
 */
export function timeNoiseMs(nowMs: number): number {
  return Math.abs(nowMs) * 8 * Number.EPSILON;
}

/**
 * Most whole milliseconds an algorithm adds to its closed-form `retryAfterMs` while checking
 * that a retry at that instant fits. Within the limiter's bounds one or two suffice (they absorb
 * rounding); the cap makes the check bounded whatever the input, and an algorithm that reaches it
 * answers the instant its limit is entirely unused again, where any cost the limit can hold fits.
 * The Redis script uses the same number (`stores/redis-decide.lua`).
 */
export const RETRY_CORRECTION_STEPS = 8;

/** A duration rounded up to whole milliseconds, never negative. */
export function ceilMs(durationMs: number): number {
  return durationMs <= MS_TOLERANCE ? 0 : Math.ceil(durationMs - MS_TOLERANCE);
}

/** Whole units still available, rounded down and kept within `[0, limit]`. */
export function wholeUnits(available: number, limit: number): number {
  const units = Math.floor(available + UNIT_TOLERANCE);
  if (units <= 0) return 0;
  return units < limit ? units : Math.floor(limit);
}

/**
 * Start of the window containing `nowMs`, cut from the clock so every key's windows line up.
 * `nowMs % windowMs` is exact in binary, so the start is an exact multiple whenever one is
 * representable; a negative `nowMs` (a manual clock set before 0) still rounds down.
 */
export function windowStartOf(nowMs: number, windowMs: number): number {
  const intoWindowMs = nowMs % windowMs;
  return intoWindowMs < 0 ? nowMs - intoWindowMs - windowMs : nowMs - intoWindowMs;
}

/**
 * How many whole windows `laterStartMs` lies after `earlierStartMs` (negative when the clock went
 * back). Rounded, so that fractional window lengths whose multiples are inexact still compare.
 */
export function windowsBetween(
  earlierStartMs: number,
  laterStartMs: number,
  windowMs: number,
): number {
  return Math.round((laterStartMs - earlierStartMs) / windowMs);
}

/**
 * The element at `index` of an array whose bounds the caller maintains. Throws on a hole or an
 * out-of-range index instead of letting `undefined` turn into NaN downstream.
 */
export function numberAt(array: readonly number[], index: number): number {
  const value = array[index];
  if (value === undefined) {
    throw new RangeError(`index ${index} is outside an array of length ${array.length}`);
  }
  return value;
}
