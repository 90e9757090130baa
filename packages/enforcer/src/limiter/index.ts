/**
 * `@limitplane/enforcer/limiter`: the pure limiter core and its stores, for advanced users who
 * decide without the enforcer runtime. `decideLayered` / `peekLayered` are the reference every
 * store agrees with (`(state, checks, nowMs, cost) -> decision`); `stepLeakyShaper` is the one
 * algorithm that delays instead of rejecting. `decideLayeredInto` and `decideLayeredBinding` are
 * the same decision for hot loops (reused output arrays; the latter without decision objects, for
 * replays that read only the admission and the binding check). Modules not exported here are
 * internal.
 */

export { LIMIT_BOUNDS, validateLimit } from "./arguments";
export { type Clock, ManualClock, monotonicClock, wallClock } from "./clock";
export {
  decideLayered,
  decideLayeredBinding,
  decideLayeredInto,
  LayeredScratch,
  peekLayered,
} from "./layered";
export {
  type LeakyShaperState,
  type ShapedDecision,
  type ShapedStep,
  stepLeakyShaper,
} from "./leaky-shaper";
export type { LimitState } from "./step-limit";
export { MemoryStore, type MemoryStoreOptions } from "./stores/memory";
export { type RedisScriptClient, RedisStore, type RedisStoreOptions } from "./stores/redis";
export { StoreUnavailableError } from "./stores/store-unavailable-error";
export type {
  Algorithm,
  DecideInput,
  Decision,
  FixedWindowLimit,
  LayeredDecision,
  LeakyMeterLimit,
  LeakyShaperLimit,
  LeasedDecision,
  LeaseWanted,
  LimitCheck,
  LimiterStore,
  LimitMode,
  LimitOutcome,
  LimitSpec,
  RejectReason,
  SlidingLogLimit,
  SlidingWindowLimit,
  TokenBucketLimit,
} from "./types";
