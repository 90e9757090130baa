import type { LimitCheck, LimitSpec } from "../src/limiter/types";

/** One round of the race test, as published to the workers. */
export interface RaceRound {
  readonly id: number;
  readonly variant: "atomic" | "layered" | "non-atomic";
  readonly subject: string;
  /** Requests per worker, by worker index. */
  readonly shares: readonly number[];
  /** Layered rounds only: which layer has capacity 20 (the other has 30). */
  readonly binding?: "ceiling" | "tier";
  /**
   * Each process sends its requests one after another instead of all at once, so that any
   * over-admission can only come from the processes overlapping.
   */
  readonly isSequential?: boolean;
  /** Each process batches its requests: its share goes out as one script call. */
  readonly isBatched?: boolean;
}

/**
 * Refill so slow it cannot interfere: one token per 1,000 s, so over a round lasting
 * milliseconds the balance moves by far less than the whole unit `remaining` shows.
 */
const tokens = (capacity: number): LimitSpec => ({
  algorithm: "token-bucket",
  capacity,
  refillPerSec: 0.001,
});

/** An hour-long sliding log: no window boundary can fall inside a round. */
const hourLog = (limit: number): LimitSpec => ({
  algorithm: "sliding-log",
  limit,
  windowMs: 3_600_000,
});

/** The checks every request of `round` carries (the same in every process). */
export function raceChecks(round: RaceRound): LimitCheck[] {
  if (round.variant !== "layered") {
    return [{ scope: "tier:pro", bucket: "account", limit: tokens(20), mode: "enforce" }];
  }
  const ceilingSize = round.binding === "ceiling" ? 20 : 30;
  const tierSize = round.binding === "ceiling" ? 30 : 20;
  return [
    { scope: "ceiling", bucket: "ceiling", limit: hourLog(ceilingSize), mode: "enforce" },
    { scope: "tier:pro", bucket: "account", limit: tokens(tierSize), mode: "enforce" },
  ];
}
