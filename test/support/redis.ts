import { once } from "node:events";
import type { Redis } from "ioredis";
import { createRedis, type RedisRole } from "@/lib/server/redis";

/**
 * A client of `role` for this test run's Redis, once it is ready. The `decisions` role has no
 * offline queue, so a command sent before the connection is ready fails at once: wait for it.
 */
export async function readyRedis(role: RedisRole, url?: string): Promise<Redis> {
  const client = createRedis(role, url === undefined ? {} : { url });
  if (client.status !== "ready") await once(client, "ready");
  return client;
}
