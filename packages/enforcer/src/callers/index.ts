/**
 * `@limitplane/enforcer/callers`: budgets for callers of someone else's quota. Workers wait their
 * turn for a provider's limit (`createOutboundLimiter`: `acquire`, `schedule`), fair across
 * processes, and in-flight caps guard a handler (`createConcurrencyMiddleware`,
 * `withConcurrencyLimit`). A gateway protecting its own API needs only the root entry point.
 */
export {
  CONCURRENCY_EXCEEDED_TYPE,
  type ConcurrencyExceededProblem,
  type ConcurrencyLimitOptions,
  createConcurrencyMiddleware,
  withConcurrencyLimit,
} from "../enforcer/concurrency-middleware";
export {
  type AcquireOptions,
  createOutboundLimiter,
  type OutboundBudgetSource,
  OutboundError,
  type OutboundErrorCode,
  type OutboundLimiter,
  type OutboundLimiterOptions,
  type OutboundMetricsOptions,
  type OutboundPermit,
  type OutboundSlot,
  type ScheduleOptions,
} from "../enforcer/outbound-limiter";
