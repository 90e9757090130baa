/**
 * Arithmetic on limits that does not depend on stored state: a limit's size and sustained rate (to
 * compare an override with what it replaces), and scaling by an incident factor.
 */
import { limitSizeOf } from "../limiter/step-limit";
import type { LimitSpec } from "../limiter/types";

/** Largest count a limit may hold (`limit`, `capacity`, `burst`). */
export const MAX_LIMIT_COUNT = 1_000_000_000;
/**
 * Longest window: 365 days, envoyproxy/ratelimit's `year`. Every algorithm keeps it exactly: a
 * window is a number of ms on the store's clock (epoch ms, well inside a double's integers),
 * Redis keys live for a window at most, and a sliding log keeps at most `limit` entries.
 */
export const MAX_WINDOW_MS = 365 * 24 * 60 * 60 * 1000;
/** Longest an incident override (or a descriptor value's raise) may last: 30 days. */
export const MAX_INCIDENT_DURATION_MS = 30 * 24 * 60 * 60 * 1000;
/** Slowest refill or drain: one unit every ~11.6 days. Slower is a typo, not a policy. */
export const MIN_RATE_PER_SEC = 0.000_001;
/** Fastest refill or drain. */
export const MAX_RATE_PER_SEC = 1_000_000_000;
/** Most units of cost one request may spend. */
export const MAX_COST = 1_000_000;

/**
 * How much cost the limit admits back to back: `limit`, `capacity` or `burst`. The limiter's own
 * (`limitSizeOf`), under the name the policy model uses.
 */
export const limitSize: (spec: LimitSpec) => number = limitSizeOf;

/** The name of the field {@link limitSize} reads, for error paths. */
export function limitSizeField(spec: LimitSpec): "limit" | "capacity" | "burst" {
  switch (spec.algorithm) {
    case "fixed-window":
    case "sliding-log":
    case "sliding-window":
      return "limit";
    case "token-bucket":
      return "capacity";
    case "leaky-meter":
      return "burst";
    default:
      return assertNever(spec);
  }
}

/** The field that sets the sustained rate, for error paths. */
export function limitRateField(spec: LimitSpec): "windowMs" | "refillPerSec" | "drainPerSec" {
  switch (spec.algorithm) {
    case "fixed-window":
    case "sliding-log":
    case "sliding-window":
      return "windowMs";
    case "token-bucket":
      return "refillPerSec";
    case "leaky-meter":
      return "drainPerSec";
    default:
      return assertNever(spec);
  }
}

/** Sustained rate in units of cost per second (`limit / windowMs` for the window algorithms). */
export function limitRatePerSec(spec: LimitSpec): number {
  switch (spec.algorithm) {
    case "fixed-window":
    case "sliding-log":
    case "sliding-window":
      return (spec.limit * 1000) / spec.windowMs;
    case "token-bucket":
      return spec.refillPerSec;
    case "leaky-meter":
      return spec.drainPerSec;
    default:
      return assertNever(spec);
  }
}

/**
 * The limit an incident factor makes of `spec`: size and rate both multiplied (a window keeps its
 * length and admits `factor` times as much). Counts are rounded down (never more than the factor
 * grants) and kept within the model's bounds, so the result always passes the schema.
 */
export function scaleLimit(spec: LimitSpec, factor: number): LimitSpec {
  switch (spec.algorithm) {
    case "fixed-window":
    case "sliding-log":
    case "sliding-window":
      return {
        algorithm: spec.algorithm,
        limit: scaleCount(spec.limit, factor),
        windowMs: spec.windowMs,
      };
    case "token-bucket":
      return {
        algorithm: "token-bucket",
        capacity: scaleCount(spec.capacity, factor),
        refillPerSec: scaleRate(spec.refillPerSec, factor),
      };
    case "leaky-meter":
      return {
        algorithm: "leaky-meter",
        burst: scaleCount(spec.burst, factor),
        drainPerSec: scaleRate(spec.drainPerSec, factor),
      };
    default:
      return assertNever(spec);
  }
}

/** A short reading of a limit: `token-bucket 20 burst, 10/s`, `fixed-window 100 per 60000 ms`. */
export function describeLimit(spec: LimitSpec): string {
  switch (spec.algorithm) {
    case "fixed-window":
    case "sliding-log":
    case "sliding-window":
      return `${spec.algorithm} ${spec.limit} per ${spec.windowMs} ms`;
    case "token-bucket":
      return `token-bucket ${spec.capacity} burst, ${spec.refillPerSec}/s`;
    case "leaky-meter":
      return `leaky-meter ${spec.burst} burst, ${spec.drainPerSec}/s`;
    default:
      return assertNever(spec);
  }
}

function scaleCount(count: number, factor: number): number {
  // The epsilon absorbs binary fractions (0.1 * 30 = 2.9999...) that must not lose a whole unit.
  const scaled = Math.floor(count * factor + 1e-9);
  return Math.min(MAX_LIMIT_COUNT, Math.max(1, scaled));
}

function scaleRate(ratePerSec: number, factor: number): number {
  return Math.min(MAX_RATE_PER_SEC, Math.max(MIN_RATE_PER_SEC, ratePerSec * factor));
}

/** Exhaustiveness check for switches over closed unions. */
export function assertNever(value: never): never {
  throw new Error(`unexpected value: ${JSON.stringify(value)}`);
}
