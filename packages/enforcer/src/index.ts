/**
 * `@limitplane/enforcer`: what a gateway embeds. `createEnforcer` (Redis, policy hot reload,
 * heartbeats, metrics), the HTTP adapters, the two stores and the types of what they take and
 * return. README.md shows each in use. The control plane and advanced users also have
 * `@limitplane/enforcer/policy`, `/publication` and `/limiter`; nothing else is public.
 */

export type {
  BreakerSnapshot,
  BreakerState,
  CircuitBreakerOptions,
} from "./enforcer/circuit-breaker";
export type { EnforcerRequest, EnforcerResult } from "./enforcer/decision-engine";
export type { DecisionMetricsOptions } from "./enforcer/decision-metrics";
export {
  createEnforcer,
  type Enforcer,
  type EnforcerClients,
  type EnforcerOptions,
  type EnforcerStatus,
} from "./enforcer/enforcer";
export {
  createFetchMiddleware,
  type FetchHandler,
  type FetchMiddleware,
  type FetchMiddlewareOptions,
  withRateLimit,
} from "./enforcer/fetch-middleware";
export {
  forwardedClientAddress,
  type HttpAdapterOptions,
  type Identity,
} from "./enforcer/http-adapter";
export {
  type HttpDecision,
  type LimiterUnavailableProblem,
  PROBLEM_CONTENT_TYPE,
  QUOTA_EXCEEDED_TYPE,
  type QuotaExceededProblem,
  type RateLimitHttpResult,
  type RateLimitProblem,
  TEMPORARY_REDUCED_CAPACITY_TYPE,
} from "./enforcer/http-headers";
export type { LeaseFigures, LeaseOptions } from "./enforcer/lease-table";
export type { LocalStageOptions } from "./enforcer/local-stage";
export type { EnforcerLogger, LogLevel } from "./enforcer/logger";
export {
  createNodeMiddleware,
  type NodeMiddleware,
  type NodeMiddlewareOptions,
  type NodeNext,
} from "./enforcer/node-middleware";
export type { AppliedSnapshot, SnapshotErrorReport } from "./enforcer/policy-follower";
export type { RecentRejectionsOptions } from "./enforcer/recent-rejections";
export type { ResolutionCacheOptions } from "./enforcer/resolution-cache";
export type {
  DecisionSource,
  EnforcerDecision,
  EnforcerOutcome,
  EnforcerRejectReason,
  StoreFailure,
  StoreFailurePolicy,
} from "./enforcer/types";
export { LIMIT_BOUNDS, validateLimit } from "./limiter/arguments";
export type { Clock } from "./limiter/clock";
export { MemoryStore, type MemoryStoreOptions } from "./limiter/stores/memory";
export {
  type RedisScriptClient,
  RedisStore,
  type RedisStoreOptions,
} from "./limiter/stores/redis";
export { StoreUnavailableError } from "./limiter/stores/store-unavailable-error";
export type {
  Algorithm,
  DecideInput,
  Decision,
  FixedWindowLimit,
  LayeredDecision,
  LeakyMeterLimit,
  LeakyShaperLimit,
  LimitCheck,
  LimiterStore,
  LimitMode,
  LimitOutcome,
  LimitSpec,
  RejectReason,
  SlidingLogLimit,
  SlidingWindowLimit,
  TokenBucketLimit,
} from "./limiter/types";
export type { PolicyStateSize } from "./policy/policy-state";
