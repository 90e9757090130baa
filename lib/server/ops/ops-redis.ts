/**
 * The console's read-only view of what enforcers report in Redis: live heartbeats (`enforcers`,
 * `enforcer:<id>`) and each customer's recent rejections (`rejections:<customerId>`), named by
 * `lib/enforcer/redis-keys.ts`. One `control` connection per process, shared by these readers.
 */
import type { Redis } from "ioredis";
import { enforcerRedisNames } from "@/lib/enforcer/redis-keys";
import { loadEnv } from "@/lib/server/env";
import { createRedis } from "@/lib/server/redis";

const globalForOps = globalThis as typeof globalThis & { limitplaneOpsRedis?: Redis };

export function opsRedis(): Redis {
  globalForOps.limitplaneOpsRedis ??= createRedis("control", {
    connectionName: "limitplane-console-ops",
  });
  return globalForOps.limitplaneOpsRedis;
}

/** What the readers need: a client and the installation's key prefix (tests pass their own). */
export interface OpsRedisDeps {
  readonly redis: Pick<Redis, "zrangebyscore" | "pipeline" | "lrange">;
  readonly prefix: string;
}

export function getOpsRedisDeps(): OpsRedisDeps {
  return { redis: opsRedis(), prefix: loadEnv().REDIS_KEY_PREFIX };
}

export function opsRedisNames(deps: OpsRedisDeps) {
  return enforcerRedisNames(deps.prefix);
}
