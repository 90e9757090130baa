/**
 * Argument checks for the pure algorithms. A NaN, an infinite rate or a negative cost is a
 * programmer or configuration mistake, so it throws rather than becoming a decision: left alone,
 * NaN compares false everywhere and silently admits or rejects forever. The checks are a few
 * comparisons each, cheap enough for every step.
 */

/**
 * Times must stay where a double still resolves whole milliseconds (|nowMs| <= 2^52, about
 * 142,000 years of epoch milliseconds), so that `nowMs + 1 > nowMs` and every wait terminates.
 */
const MAX_ABS_TIME_MS = 2 ** 52;

/** `nowMs` is a finite time within ±2^52 ms and `cost` a finite number of units >= 0. */
export function assertTimeAndCost(nowMs: number, cost: number): void {
  if (!(nowMs >= -MAX_ABS_TIME_MS && nowMs <= MAX_ABS_TIME_MS)) {
    throw new RangeError(`nowMs must be a finite time within ±2^52 ms, got ${nowMs}`);
  }
  if (!(cost >= 0 && cost <= Number.MAX_VALUE)) {
    throw new RangeError(`cost must be a finite number >= 0, got ${cost}`);
  }
}

/** A size (`limit`, `capacity`, `burst`, `maxQueue`): finite and >= 0. Zero admits only cost 0. */
export function assertSize(name: string, value: number): void {
  if (!(value >= 0 && value <= Number.MAX_VALUE)) {
    throw new RangeError(`${name} must be a finite number >= 0, got ${value}`);
  }
}

/**
 * A rate or a duration (`refillPerSec`, `drainPerSec`, `windowMs`): finite and > 0, because a zero
 * rate would make every wait infinite and `retryAfterMs` is never Infinity.
 */
export function assertPositive(name: string, value: number): void {
  if (!(value > 0 && value <= Number.MAX_VALUE)) {
    throw new RangeError(`${name} must be a finite number > 0, got ${value}`);
  }
}
