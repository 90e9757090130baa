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
