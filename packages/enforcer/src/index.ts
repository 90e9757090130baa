/**
 * `@limitplane/enforcer`: what a gateway embeds. `createEnforcer` (its options grouped by concern,
 * and the error it throws for options it cannot run with), the Node and Fetch middlewares, and
 * the one decision and one result a request gets. The package README shows each in use.
 *
 * The other entry points: `/limiter` (the pure limiter core and its stores), `/policy` (the
 * policy model), `/publication` (the Redis protocol with the control plane), `/recording` (the
 * traffic record), `/testing` (test helpers). Nothing else is public.
 */

export type {
  DescriptorDecision,
  EnforcerRequest,
  EnforcerResult,
} from "./enforcer/decision-engine";
export { createEnforcer, type Enforcer, type EnforcerStatus } from "./enforcer/enforcer";
export {
  type EnforcerCacheOptions,
  type EnforcerControlPlaneOptions,
  type EnforcerOptions,
  EnforcerOptionsError,
  type EnforcerRedisOptions,
  type EnforcerReportingOptions,
  type EnforcerTimeoutOptions,
} from "./enforcer/enforcer-options";
export {
  createFetchMiddleware,
  type FetchMiddleware,
  type FetchMiddlewareOptions,
  withRateLimit,
} from "./enforcer/fetch-middleware";
export type { Identity } from "./enforcer/http-adapter";
export type { RateLimitProblem } from "./enforcer/http-headers";
export type { EnforcerLogger } from "./enforcer/logger";
export {
  createNodeMiddleware,
  type NodeMiddleware,
  type NodeMiddlewareOptions,
} from "./enforcer/node-middleware";
export type { EnforcerDecision } from "./enforcer/types";
export { RedisProtocolError } from "./publication/protocol";
