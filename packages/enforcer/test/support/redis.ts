import { once } from "node:events";
import type { Redis } from "ioredis";
import { createRedisClient, type RedisRole } from "../../src/publication/redis-clients";

/**
 * A client of `role` for this test run's Redis (`REDIS_URL`, set by setup-env.ts), once it is
 * ready. The `decisions` role has no offline queue, so a command sent before the connection is
 * ready fails at once: wait for it.
 */
export async function readyRedis(role: RedisRole, url?: string): Promise<Redis> {
  const client = createRedisClient(role, { url: url ?? process.env.REDIS_URL ?? "" });
  if (client.status !== "ready") await once(client, "ready");
  return client;
}
