/**
 * Redis clients for the console, the worker and the scripts: the package's one client factory
 * (`createRedisClient`, with its per-role timeouts and reconnects), pointed at this installation's
 * Redis unless told otherwise: a Cluster client on REDIS_CLUSTER_NODES when that is set (with
 * REDIS_URL's TLS and credentials), the primary the sentinels name when REDIS_SENTINELS is set,
 * else one Redis at REDIS_URL (`redisTargetOf` in env.ts decides, for every process).
 */
import "server-only";
import {
  type CreateRedisOptions,
  createRedisClient,
  type RedisClient,
  type RedisRole,
} from "@limitplane/enforcer/publication";
import type { Redis } from "ioredis";
import { loadEnv, type Region, redisTargetOf } from "@/lib/server/env";

export type { RedisClient, RedisRole } from "@limitplane/enforcer/publication";

/** A client of one Redis at `url`, whatever the environment says. The caller must `quit()` it. */
export function createRedis(
  role: RedisRole,
  options: Partial<CreateRedisOptions> & {
    url: string;
    clusterNodes?: undefined;
    sentinel?: undefined;
  },
): Redis;
/**
 * A new client for `role` on this installation's Redis: a Cluster client when REDIS_CLUSTER_NODES
 * is set, the sentinels' primary when REDIS_SENTINELS is, else one Redis at REDIS_URL. The caller owns it and must `quit()` it.
 */
export function createRedis(role: RedisRole, options?: Partial<CreateRedisOptions>): RedisClient;
export function createRedis(
  role: RedisRole,
  options: Partial<CreateRedisOptions> = {},
): RedisClient {
  if (options.url !== undefined) {
    return createRedisClient(role, { ...options, url: options.url });
  }
  const target = redisTargetOf(loadEnv());
  return createRedisClient(role, {
    ...options,
    ...target,
    clusterNodes: options.clusterNodes ?? target.clusterNodes,
  });
}

/**
 * A new client for `role` on one region's Redis (REGIONS), whatever REGION says: the worker and
 * the console talk to every region. The caller owns it and must `quit()` it.
 */
export function createRegionRedis(
  role: RedisRole,
  region: Region,
  options: Partial<CreateRedisOptions> = {},
): RedisClient {
  return createRedisClient(role, { ...options, ...region.redis });
}
