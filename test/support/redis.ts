import { once } from "node:events";
import { freePort } from "@limitplane/enforcer/testing";
import type { Redis } from "ioredis";
import { createRedis, type RedisClient, type RedisRole } from "@/lib/server/redis";

/**
 * A client of `role` for this test run's Redis, once it is ready. The `decisions` role has no
 * offline queue, so a command sent before the connection is ready fails at once: wait for it.
 */
export async function readyRedis(role: RedisRole, url?: string): Promise<RedisClient> {
  const client = url === undefined ? createRedis(role) : createRedis(role, { url });
  if (client.status !== "ready") await once(client, "ready");
  return client;
}

/**
 * A real client pointed at a port where no Redis listens, as a console process sees Redis when it
 * is down: the `decisions` role has no offline queue, so every command fails at once with the
 * client's own error. Disconnect it after the test.
 */
export async function unreachableRedis(): Promise<Redis> {
  const client = createRedis("decisions", { url: `redis://127.0.0.1:${await freePort()}/0` });
  client.on("error", () => {
    // Expected: nothing listens there.
  });
  return client;
}
