import fc from "fast-check";
import type { Decision } from "../limiter/types";

/** One request in a generated sequence: when it arrives and what it costs. */
export interface Arrival {
  readonly atMs: number;
  readonly cost: number;
}

export interface ArrivalOptions {
  /** Largest gap between consecutive arrivals; gaps of 0 (simultaneous requests) are common. */
  readonly maxGapMs: number;
  readonly maxCost: number;
  /** Whole milliseconds and whole costs, so reference models can use exact integer arithmetic. */
  readonly isIntegral?: boolean;
  readonly startMs?: number;
  readonly maxLength?: number;
}

/**
 * Instants where doubles are awkward: zero, small fractions, before zero (a manual clock),
 * today's epoch milliseconds (a 2^-12 ms grid) and 2^45 ms (a 2^-7 ms grid).
 */
export const awkwardStartMs = fc.constantFrom(
  0,
  0.5,
  -500_000.25,
  1_000_000.3,
  1_700_000_000_000.123,
  2 ** 45 + 0.77,
);

/**
 * Durations (a window, or the time one unit takes to refill or drain) whose multiples are
 * inexact in binary, tiny, or beyond 2^31 ms.
 */
export const awkwardDurationMs = fc.oneof(
  fc.constantFrom(0.01, 0.3, 1, 7, 1000 / 3, 60_000, 2 ** 33),
  fc.double({ min: 0.01, max: 100_000, noNaN: true }),
);

/**
 * A limit size, a duration and arrivals paced on that duration, all on awkward doubles: the
 * input for "a retry at exactly +retryAfterMs is admitted".
 */
export function awkwardScenarioArbitrary(): fc.Arbitrary<{
  size: number;
  durationMs: number;
  arrivals: Arrival[];
}> {
  return fc
    .record({
      size: fc.oneof(fc.constantFrom(1, 2, 3, 10), fc.double({ min: 0.5, max: 20, noNaN: true })),
      durationMs: awkwardDurationMs,
      startMs: awkwardStartMs,
    })
    .chain(({ size, durationMs, startMs }) =>
      arrivalsArbitrary({
        maxGapMs: durationMs,
        maxCost: size * 1.2,
        isIntegral: false,
        startMs: startMs + 0.123,
      }).map((arrivals) => ({ size, durationMs, arrivals })),
    );
}

/** How many generated cases the floating-point properties run: edge cases are rare. */
export const AWKWARD_RUNS = 400;

/** Sequences of arrivals in time order, with bursts of simultaneous requests. */
export function arrivalsArbitrary(options: ArrivalOptions): fc.Arbitrary<Arrival[]> {
  const isIntegral = options.isIntegral ?? true;
  const gap = isIntegral
    ? fc.oneof(fc.constant(0), fc.integer({ min: 0, max: options.maxGapMs }))
    : fc.oneof(
        fc.constant(0),
        fc.double({ min: 0, max: options.maxGapMs, noNaN: true, noDefaultInfinity: true }),
      );
  const cost = isIntegral
    ? fc.oneof(fc.constant(1), fc.integer({ min: 0, max: options.maxCost }))
    : fc.oneof(
        fc.constant(1),
        fc.double({ min: 0, max: options.maxCost, noNaN: true, noDefaultInfinity: true }),
      );
  return fc
    .array(fc.tuple(gap, cost), { minLength: 1, maxLength: options.maxLength ?? 60 })
    .map((steps) => {
      let atMs = options.startMs ?? 1_000_000;
      return steps.map(([gapMs, units]) => {
        atMs += gapMs;
        return { atMs, cost: units };
      });
    });
}

export interface Replayed<S, D extends Decision = Decision> {
  readonly arrival: Arrival;
  readonly decision: D;
  /** The state the step was given. */
  readonly before: S | undefined;
  /** The state the step returned. */
  readonly after: S;
}

/** Feeds arrivals through a pure step function, threading its state. */
export function replay<S, D extends Decision = Decision>(
  step: (state: S | undefined, nowMs: number, cost: number) => { decision: D; state: S },
  arrivals: readonly Arrival[],
): Replayed<S, D>[] {
  let state: S | undefined;
  return arrivals.map((arrival) => {
    const before = state;
    const result = step(state, arrival.atMs, arrival.cost);
    state = result.state;
    return { arrival, decision: result.decision, before, after: result.state };
  });
}

/** The invariants every decision keeps, whatever the algorithm. */
export function assertDecisionInvariants(decision: Decision): void {
  const problems: string[] = [];
  if (decision.retryAfterMs < 0 || !Number.isInteger(decision.retryAfterMs)) {
    problems.push("retryAfterMs must be a whole number >= 0");
  }
  if (decision.resetAfterMs < 0 || !Number.isInteger(decision.resetAfterMs)) {
    problems.push("resetAfterMs must be a whole number >= 0");
  }
  if (decision.allowed && decision.retryAfterMs !== 0) problems.push("allowed with a retry");
  if (decision.allowed !== (decision.reason === null)) problems.push("reason null iff allowed");
  if (decision.remaining < 0 || decision.remaining > decision.limit) {
    problems.push("remaining outside [0, limit]");
  }
  if (!Number.isInteger(decision.remaining)) problems.push("remaining must be whole");
  if (problems.length > 0) {
    throw new Error(`${problems.join("; ")}: ${JSON.stringify(decision)}`);
  }
}

/** Sum of the costs admitted at instants within `[fromMs, toMs]` (both ends included). */
export function admittedBetween(
  replayed: readonly Replayed<unknown>[],
  fromMs: number,
  toMs: number,
): number {
  let sum = 0;
  for (const { arrival, decision } of replayed) {
    if (decision.allowed && arrival.atMs >= fromMs && arrival.atMs <= toMs) sum += arrival.cost;
  }
  return sum;
}
