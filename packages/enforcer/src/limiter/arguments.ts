/**
 * What the limiter accepts, checked where it enters. A NaN, an infinite rate, a string where a
 * number belongs or a mode that is neither "enforce" nor "dry-run" is a programmer or
 * configuration mistake, so it throws (a TypeError for the wrong kind of value, a RangeError for a
 * value outside its bounds, each naming the field) rather than becoming a decision: left alone,
 * NaN compares false everywhere and silently admits or rejects forever, and a typo'd mode stops
 * enforcing without a word.
 *
 * A limit is checked ONCE, the first time it is used (or when `validateLimit` prepares it):
 * limits come from a compiled policy and are reused for every request, so the hot path pays one
 * `WeakSet` lookup per limit, not the checks. A list of checks is remembered the same way. Treat
 * validated limits and check lists as immutable (the policy freezes its own). Per call only the
 * time and the cost are checked, a few comparisons.
 *
 * The bounds ({@link LIMIT_BOUNDS}) keep every intermediate value finite and every wait exact to
 * the millisecond: times stay within ±2^52 ms and no wait exceeds 2 × 10^12 ms, so
 * `nowMs + retryAfterMs` is always below 2^53, where doubles still hold whole milliseconds.
 */
import type { LeakyShaperLimit, LimitCheck, LimitSpec } from "./types";

/** The documented bounds of every number a limit holds. */
export const LIMIT_BOUNDS = Object.freeze({
  /** Largest size (`limit`, `capacity`, `burst`, `maxQueue`), in units of cost: 10^15. */
  maxSize: 1e15,
  /** Shortest window (`windowMs`): 0.001 ms (any fraction above it). */
  minWindowMs: 0.001,
  /**
   * Longest span a limit may take to come back: its `windowMs`, and the time a rate takes to
   * refill or drain the whole size (`size / rate` seconds). 10^12 ms, about 31.7 years.
   */
  maxDurationMs: 1e12,
  /** Slowest rate (`refillPerSec`, `drainPerSec`): 10^-9 units per second. */
  minRatePerSec: 1e-9,
  /** Fastest rate: 10^15 units per second. */
  maxRatePerSec: 1e15,
  /**
   * Times (`nowMs` of an injected clock): within ±2^52 ms, about 142,000 years either side of the
   * epoch, where `nowMs + 1 > nowMs` still holds.
   */
  maxAbsTimeMs: 2 ** 52,
});

/** The two modes a check may have; `off` limits are never passed to a store. */
const MODES: readonly string[] = ["enforce", "dry-run"];

function describe(value: unknown): string {
  if (typeof value === "string") return `the string ${JSON.stringify(value.slice(0, 40))}`;
  if (typeof value === "number") return String(value);
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  return `a value of type ${typeof value}`;
}

/**
 * `nowMs` is a finite time within ±2^52 ms and `cost` a finite number of units >= 0. Called on
 * every decision: a handful of comparisons.
 */
export function assertTimeAndCost(nowMs: number, cost: number): void {
  if (typeof cost !== "number") {
    throw new TypeError(`cost must be a number of units, got ${describe(cost)}`);
  }
  if (!(cost >= 0 && cost <= Number.MAX_VALUE)) {
    throw new RangeError(`cost must be a finite number >= 0, got ${cost}`);
  }
  if (
    typeof nowMs !== "number" ||
    !(nowMs >= -LIMIT_BOUNDS.maxAbsTimeMs && nowMs <= LIMIT_BOUNDS.maxAbsTimeMs)
  ) {
    throw new RangeError(`nowMs must be a finite time within ±2^52 ms, got ${describe(nowMs)}`);
  }
}

/** A subject or bucket name: any string (the stores never build keys by joining them). */
export function assertName(field: string, value: unknown): asserts value is string {
  if (typeof value !== "string") {
    throw new TypeError(`${field} must be a string, got ${describe(value)}`);
  }
}

function numberIn(field: string, value: unknown, min: number, max: number, rule: string): number {
  if (typeof value !== "number") {
    throw new TypeError(`${field} must be a number, got ${describe(value)}`);
  }
  if (!(value >= min && value <= max)) {
    throw new RangeError(`${field} must be ${rule}, got ${value}`);
  }
  return value;
}

function size(field: string, value: unknown): number {
  return numberIn(field, value, 0, LIMIT_BOUNDS.maxSize, "a finite number from 0 to 1e15");
}

function windowMs(field: string, value: unknown): number {
  return numberIn(
    field,
    value,
    LIMIT_BOUNDS.minWindowMs,
    LIMIT_BOUNDS.maxDurationMs,
    "a number of milliseconds from 0.001 to 1e12 (about 31.7 years)",
  );
}

/** A rate, and the time it takes to refill or drain `sizeValue` at it within the bound. */
function rate(
  field: string,
  value: unknown,
  sizeField: string,
  sizeValue: number,
  verb: "refill" | "drain",
): void {
  const perSec = numberIn(
    field,
    value,
    LIMIT_BOUNDS.minRatePerSec,
    LIMIT_BOUNDS.maxRatePerSec,
    "a finite number of units per second from 1e-9 to 1e15",
  );
  const fullMs = (sizeValue * 1000) / perSec;
  if (!(fullMs <= LIMIT_BOUNDS.maxDurationMs)) {
    throw new RangeError(
      `${field}: to ${verb} ${sizeField} ${sizeValue} at ${perSec} per second takes ${fullMs} ms; a limit may take at most 1e12 ms (about 31.7 years) to come back, so raise ${field} or lower ${sizeField}`,
    );
  }
}

const validLimits = new WeakSet<object>();
const validCheckLists = new WeakSet<object>();
/**
 * The last limit and check list found valid: a gateway deciding against one limit (or one tier's
 * list) over and over pays a comparison, not a `WeakSet` lookup.
 */
let lastValidLimit: object | undefined;
let lastValidChecks: object | undefined;

/**
 * Checks `limit` against {@link LIMIT_BOUNDS}, once: a limit seen before returns at once.
 * `field` names it in the error (`checks[2].limit`). Throws a TypeError for a missing or
 * mistyped field or an unknown algorithm, a RangeError for a value out of bounds.
 */
export function assertValidLimit(limit: LimitSpec | LeakyShaperLimit, field = "limit"): void {
  // Small on purpose, so the hot path inlines it; the checks live in checkLimit.
  if (limit !== lastValidLimit) checkLimit(limit, field);
}

function checkLimit(limit: LimitSpec | LeakyShaperLimit, field: string): void {
  if (validLimits.has(limit)) {
    lastValidLimit = limit;
    return;
  }
  if (typeof limit !== "object" || limit === null) {
    throw new TypeError(`${field} must be a limit object, got ${describe(limit)}`);
  }
  const spec: Partial<Record<string, unknown>> = limit as unknown as Record<string, unknown>;
  switch (spec.algorithm) {
    case "fixed-window":
    case "sliding-log":
    case "sliding-window":
      size(`${field}.limit`, spec.limit);
      windowMs(`${field}.windowMs`, spec.windowMs);
      break;
    case "token-bucket":
      rate(
        `${field}.refillPerSec`,
        spec.refillPerSec,
        "capacity",
        size(`${field}.capacity`, spec.capacity),
        "refill",
      );
      break;
    case "leaky-meter":
      rate(
        `${field}.drainPerSec`,
        spec.drainPerSec,
        "burst",
        size(`${field}.burst`, spec.burst),
        "drain",
      );
      break;
    case "leaky-shaper":
      rate(
        `${field}.drainPerSec`,
        spec.drainPerSec,
        "maxQueue",
        size(`${field}.maxQueue`, spec.maxQueue),
        "drain",
      );
      break;
    default:
      throw new TypeError(
        `${field}.algorithm must be one of fixed-window, sliding-log, sliding-window, token-bucket, leaky-meter, leaky-shaper, got ${describe(spec.algorithm)}`,
      );
  }
  validLimits.add(limit);
  lastValidLimit = limit;
}

/**
 * Checks a decision's list of checks, once per list: each is an object with a string `scope`, an
 * optional string `bucket`, a `mode` of "enforce" or "dry-run" and a valid limit (a shaper is
 * never part of a layered decision), and no two share a bucket (they would read one state and
 * write it twice, and the last write would silently win).
 */
export function assertValidChecks(checks: readonly LimitCheck[]): void {
  if (checks !== lastValidChecks) checkChecks(checks);
}

function checkChecks(checks: readonly LimitCheck[]): void {
  if (validCheckLists.has(checks)) {
    lastValidChecks = checks;
    return;
  }
  if (!Array.isArray(checks)) {
    throw new TypeError(`checks must be a list of checks, got ${describe(checks)}`);
  }
  const buckets = new Map<string, string>();
  checks.forEach((check: unknown, index) => {
    const field = `checks[${index}]`;
    if (typeof check !== "object" || check === null) {
      throw new TypeError(`${field} must be a check object, got ${describe(check)}`);
    }
    const { scope, bucket, mode, limit } = check as Partial<Record<string, unknown>>;
    assertName(`${field}.scope`, scope);
    if (bucket !== undefined) assertName(`${field}.bucket`, bucket);
    if (typeof mode !== "string") {
      throw new TypeError(`${field}.mode must be "enforce" or "dry-run", got ${describe(mode)}`);
    }
    if (!MODES.includes(mode)) {
      throw new RangeError(`${field}.mode must be "enforce" or "dry-run", got ${describe(mode)}`);
    }
    const spec = limit as LimitSpec;
    if (
      typeof spec === "object" &&
      spec !== null &&
      spec.algorithm === ("leaky-shaper" as string)
    ) {
      throw new TypeError(
        `${field}.limit: a leaky-shaper delays instead of rejecting and cannot be layered; use shape()`,
      );
    }
    assertValidLimit(spec, `${field}.limit`);
    const name = (bucket ?? scope) as string;
    const earlier = buckets.get(name);
    if (earlier !== undefined) {
      throw new RangeError(
        `checks "${earlier}" and "${scope}" share the bucket "${name}"; every check of a decision needs its own bucket`,
      );
    }
    buckets.set(name, scope);
  });
  validCheckLists.add(checks);
  lastValidChecks = checks;
}

/**
 * Prepares a limit for use: checks it against {@link LIMIT_BOUNDS} now (throwing a TypeError or
 * RangeError naming the field) and returns it, so that a configuration mistake surfaces where
 * the limit is defined, and every later decision with it checks nothing but its cost.
 */
export function validateLimit<T extends LimitSpec | LeakyShaperLimit>(limit: T): T {
  assertValidLimit(limit);
  return limit;
}
