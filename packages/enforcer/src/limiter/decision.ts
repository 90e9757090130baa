import { wholeUnits } from "./numeric";
import type { Decision, RejectReason } from "./types";

/*
 * Every algorithm builds its decisions here, so all decisions share one property order (one
 * object shape for the engine) and the invariants in `Decision`'s JSDoc are enforced in one place.
 */

/** An admission: `available` is what is left after this request, in (possibly fractional) units. */
export function admit(limit: number, available: number, resetAfterMs: number): Decision {
  return {
    allowed: true,
    limit,
    remaining: wholeUnits(available, limit),
    retryAfterMs: 0,
    resetAfterMs,
    reason: null,
  };
}

/** A rejection: `available` is what is left, untouched by this request. */
export function reject(
  reason: RejectReason,
  limit: number,
  available: number,
  retryAfterMs: number,
  resetAfterMs: number,
): Decision {
  return {
    allowed: false,
    limit,
    remaining: wholeUnits(available, limit),
    retryAfterMs,
    resetAfterMs,
    reason,
  };
}

/**
 * One algorithm step as plain numbers, written by the `step*Into` kernels: the decision before
 * rounding and the state to store, with no object built. The object-returning steps and the
 * in-process store's prepared decisions both run the same kernel, so the arithmetic exists once;
 * one instance is reused for step after step and never kept.
 */
export class StepNumbers {
  allowed = false;
  reason: RejectReason | null = null;
  /** Units left after the request (admitted) or untouched by it (rejected), not yet rounded. */
  available = 0;
  retryAfterMs = 0;
  resetAfterMs = 0;
  /** The state to store, in the algorithm's own order (see each `step*Into`). */
  first = 0;
  second = 0;
  third = 0;

  admit(available: number, resetAfterMs: number): void {
    this.allowed = true;
    this.reason = null;
    this.available = available;
    this.retryAfterMs = 0;
    this.resetAfterMs = resetAfterMs;
  }

  reject(
    reason: RejectReason,
    available: number,
    retryAfterMs: number,
    resetAfterMs: number,
  ): void {
    this.allowed = false;
    this.reason = reason;
    this.available = available;
    this.retryAfterMs = retryAfterMs;
    this.resetAfterMs = resetAfterMs;
  }
}

/** The decision a kernel's numbers stand for, built exactly as `admit` / `reject` build it. */
export function decisionOf(numbers: StepNumbers, limit: number): Decision {
  return numbers.reason === null
    ? admit(limit, numbers.available, numbers.resetAfterMs)
    : reject(numbers.reason, limit, numbers.available, numbers.retryAfterMs, numbers.resetAfterMs);
}
