import { once } from "node:events";
import type { Redis } from "ioredis";
import {
  createRedisClient,
  type RedisClient,
  type RedisClusterNode,
  type RedisRole,
} from "../../src/publication/redis-clients";

/** `host:port,host:port` (as `OwnRedisCluster.nodesText` writes it) as Cluster nodes. */
export function parseClusterNodes(text: string): RedisClusterNode[] {
  return text
    .split(",")
    .filter((entry) => entry !== "")
    .map((entry) => {
      const separator = entry.lastIndexOf(":");
      return { host: entry.slice(0, separator), port: Number(entry.slice(separator + 1)) };
    });
}

/**
 * A client of `role` for this test run's Redis (`REDIS_URL`, set by setup-env.ts), once it is
 * ready; with `clusterNodes` (`host:port,...`, not empty) a Cluster client on them instead. The
 * `decisions` role has no offline queue, so a command sent before the connection is ready fails
 * at once: wait for it.
 */
export async function readyRedis(role: RedisRole, url?: string): Promise<Redis>;
export async function readyRedis(
  role: RedisRole,
  url: string | undefined,
  clusterNodes: string,
): Promise<RedisClient>;
export async function readyRedis(
  role: RedisRole,
  url?: string,
  clusterNodes = "",
): Promise<RedisClient> {
  const client = createRedisClient(role, {
    url: url ?? process.env.REDIS_URL ?? "",
    clusterNodes: parseClusterNodes(clusterNodes),
  });
  if (client.status !== "ready") await once(client, "ready");
  return client;
}
