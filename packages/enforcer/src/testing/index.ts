/**
 * `@limitplane/enforcer/testing`: what tests and benchmarks of code that embeds or drives the
 * enforcer need: the example policy and small builders, readable instants, a private
 * `redis-server` on a free port, and fast-check's seed from the environment. Not for production.
 */
export { configureFastCheckFromEnv } from "./fast-check";
export { examplePolicy, examplePolicyInput, exampleSnapshot, tokenBucket } from "./policy-factory";
export { freePort, OwnRedisCluster, OwnRedisServer } from "./redis-server";
export { atUtc, DAY_MS, MINUTE_MS, SECOND_MS } from "./times";
