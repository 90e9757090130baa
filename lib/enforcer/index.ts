/**
 * The enforcer's building blocks: the HTTP contract, the failure policy behind a timeout and a
 * circuit breaker, the local first stage, and metrics. Pure or nearly so (no Redis, no network, no
 * real timers unless the caller passes them); the runtime wires them to the Redis store and the
 * snapshot subscription. See README.md.
 */

export {
  type BreakerPermit,
  type BreakerSnapshot,
  type BreakerState,
  CircuitBreaker,
  type CircuitBreakerOptions,
} from "./circuit-breaker";
export {
  type DecisionSummary,
  decisionSummary,
  formatDecisionSummary,
} from "./decision-summary";
export { FailurePolicy, type FailurePolicyOptions, localShareOf } from "./failure-policy";
export { GuardedStore, type GuardedStoreOptions } from "./guarded-store";
export {
  buildRateLimitResponse,
  formatRateLimit,
  formatRateLimitPolicy,
  type HttpDecision,
  type HttpOutcome,
  type QuotaPolicy,
  quotaPolicyOf,
  type RateLimitedBody,
  type RateLimitHttpResult,
  retryAfterSeconds,
} from "./http-headers";
export {
  DenialCache,
  type DenialCacheOptions,
  denialKeyOf,
  FloodGuard,
  type FloodGuardOptions,
  LocalStage,
  type LocalStageOptions,
} from "./local-stage";
export { BoundedLru } from "./lru";
export {
  type CustomerRejection,
  DEFAULT_LATENCY_BOUNDS_MICROS,
  DecisionMetrics,
  type DecisionMetricsOptions,
  escapeLabelValue,
  type LatencyHistogram,
  type MetricsBucket,
  type MetricsDecision,
  type MetricsFigures,
  OTHER_SCOPE,
  type RecentRejection,
  RecentRejections,
  type RecentRejectionsOptions,
  type RenderPrometheusOptions,
  renderPrometheus,
  type ScopeCounts,
  wallClock,
} from "./metrics";
export {
  SF_INTEGER_MAX,
  serializeSfInteger,
  serializeSfIntegerParameters,
  serializeSfList,
  serializeSfString,
} from "./structured-fields";
export {
  type BoundedResult,
  type CallWithTimeoutOptions,
  callWithTimeout,
  ManualTimers,
  systemTimers,
  type TimerHandle,
  type Timers,
} from "./timers";
export {
  combineOutcomes,
  DECISION_SOURCES,
  type DecisionSource,
  type EnforcerCheck,
  type EnforcerDecision,
  type EnforcerInput,
  type EnforcerOutcome,
  type EnforcerRejectReason,
  findBindingOutcome,
  fromStoreDecision,
  STORE_FAILURES,
  type StoreFailure,
  type StoreFailurePolicy,
} from "./types";
