/**
 * The limiter's public entry point. Everything other modules may rely on is exported here;
 * anything not exported is an implementation detail.
 */

export { type Clock, ManualClock, monotonicClock } from "./clock";
export { type FixedWindowState, peekFixedWindow, stepFixedWindow } from "./fixed-window";
export {
  assertDistinctBuckets,
  bucketOf,
  combineOutcomes,
  decideLayered,
  decideLayeredInto,
  type LayeredStep,
  peekLayered,
  UNLIMITED,
} from "./layered";
export { type LeakyMeterState, peekLeakyMeter, stepLeakyMeter } from "./leaky-meter";
export {
  type LeakyShaperState,
  peekLeakyShaper,
  type ShapedDecision,
  type ShapedStep,
  stepLeakyShaper,
} from "./leaky-shaper";
export { MS_TOLERANCE, UNIT_TOLERANCE } from "./numeric";
export { peekSlidingLog, type SlidingLogState, stepSlidingLog } from "./sliding-log";
export { peekSlidingWindow, type SlidingWindowState, stepSlidingWindow } from "./sliding-window";
export { type LimitState, peekLimit, stepLimit } from "./step-limit";
export { MemoryStore, type MemoryStoreOptions } from "./stores/memory";
export {
  type RedisScriptClient,
  RedisStore,
  type RedisStoreOptions,
  redisStorageKey,
  type ShapeInput,
} from "./stores/redis";
export { StoreUnavailableError } from "./stores/store-unavailable-error";
export { peekTokenBucket, stepTokenBucket, type TokenBucketState } from "./token-bucket";
export type * from "./types";
