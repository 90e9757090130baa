/**
 * `@limitplane/enforcer/testing`: what tests and benchmarks of code that embeds or drives the
 * enforcer need: the example policy and small builders, readable instants, a private
 * `redis-server` or Redis Cluster on free ports, CPU spinners for a deliberately busy machine,
 * gateway processes that measure what leases admit against what a limit allows, and
 * fast-check's seed from the environment. Not for production.
 */
export { configureFastCheckFromEnv } from "./fast-check";
export {
  type ContractResponse,
  checkFetchResponseContract,
  checkRateLimitContract,
  type ParsedQuotaPolicy,
  type ParsedRateLimit,
  type ParsedRateLimitContract,
} from "./http-contract";
export {
  allowedFor,
  FairnessGateways,
  type FairnessOutcome,
  type FairnessRound,
  sustainedPerSec,
} from "./lease-fairness";
export { examplePolicy, examplePolicyInput, exampleSnapshot, tokenBucket } from "./policy-factory";
export { deleteKeysUnder, publishTestSnapshot } from "./redis-keys";
export {
  freePort,
  OwnRedisCluster,
  OwnRedisServer,
  privateRedisServerArgs,
} from "./redis-server";
export { type Spinners, startSpinners } from "./spinners";
export { atUtc, DAY_MS, MINUTE_MS, SECOND_MS } from "./times";
export { waitFor } from "./wait-for";
