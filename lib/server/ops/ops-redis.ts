/**
 * What the customer page reads of the enforcers' reports in Redis: each customer's recent
 * rejections (`rejections:<customerId>`, named by the package's publication protocol), on the
 * console's one read connection (`consoleRedis`).
 */
import "server-only";
import type { Redis } from "ioredis";
import { consoleRedis } from "@/lib/server/console-redis";
import { loadEnv } from "@/lib/server/env";

/** What the readers need: a client and the installation's key prefix (tests pass their own). */
export interface OpsRedisDeps {
  readonly redis: Pick<Redis, "lrange">;
  readonly prefix: string;
}

export function getOpsRedisDeps(): OpsRedisDeps {
  return { redis: consoleRedis(), prefix: loadEnv().REDIS_KEY_PREFIX };
}
