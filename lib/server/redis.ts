/**
 * Redis clients for the console, the worker and the scripts: the package's one client factory
 * (`createRedisClient`, with its per-role timeouts and reconnects), pointed at this installation's
 * `REDIS_URL` unless told otherwise.
 */
import "server-only";
import {
  type CreateRedisOptions,
  createRedisClient,
  type RedisRole,
} from "@limitplane/enforcer/publication";
import type { Redis } from "ioredis";
import { loadEnv } from "@/lib/server/env";

export type { RedisRole } from "@limitplane/enforcer/publication";

/** A new client for `role`. The caller owns it and must `quit()` it. */
export function createRedis(role: RedisRole, options: Partial<CreateRedisOptions> = {}): Redis {
  return createRedisClient(role, { ...options, url: options.url ?? loadEnv().REDIS_URL });
}
