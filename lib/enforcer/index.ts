/**
 * The enforcer: `createEnforcer` (the runtime a gateway embeds: Redis, policy hot reload,
 * heartbeats, metrics), the HTTP adapters (`createFetchMiddleware`, `withRateLimit`,
 * `createNodeMiddleware`), and the building blocks they are assembled from: the HTTP contract, the
 * failure policy behind a timeout and a circuit breaker, the local first stage, and metrics. See
 * README.md.
 */

export {
  type BreakerPermit,
  type BreakerSnapshot,
  type BreakerState,
  CircuitBreaker,
  type CircuitBreakerOptions,
} from "./circuit-breaker";
export {
  DecisionEngine,
  type DecisionEngineOptions,
  type EnforcerRequest,
  type EnforcerResult,
  type RequestChecker,
} from "./decision-engine";
export {
  type DecisionSummary,
  decisionSummary,
  formatDecisionSummary,
} from "./decision-summary";
export {
  createEnforcer,
  Enforcer,
  type EnforcerClients,
  type EnforcerOptions,
  type EnforcerStatus,
} from "./enforcer";
export { FailurePolicy, type FailurePolicyOptions, localShareOf } from "./failure-policy";
export {
  createFetchMiddleware,
  type FetchHandler,
  type FetchMiddleware,
  type FetchMiddlewareOptions,
  withRateLimit,
} from "./fetch-middleware";
export { GuardedStore, type GuardedStoreOptions } from "./guarded-store";
export {
  forwardedClientAddress,
  type HttpAdapterOptions,
  type Identity,
  trustedHops,
} from "./http-adapter";
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
export {
  describeError,
  type EnforcerLogger,
  jsonLineLogger,
  type LogLevel,
  silentLogger,
} from "./logger";
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
  type MetricsReadingRedis,
  readScopeMinute,
  type ScopeMinuteCounts,
} from "./metrics-reader";
export {
  createNodeMiddleware,
  type NodeMiddleware,
  type NodeMiddlewareOptions,
  type NodeNext,
} from "./node-middleware";
export {
  type AppliedSnapshot,
  PolicyFollower,
  type PolicyFollowerOptions,
  type SnapshotErrorReport,
  type SnapshotTrigger,
} from "./policy-follower";
export {
  type EnforcerRedisNames,
  enforcerRedisNames,
  NON_SCOPE_FIELD_PREFIX,
  parseScopeCounts,
  SCOPE_COUNT_FIELDS,
  type ScopeCountField,
  scopeField,
} from "./redis-keys";
export { bucketFields, MetricsFlusher, StatusReporter } from "./reporters";
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
