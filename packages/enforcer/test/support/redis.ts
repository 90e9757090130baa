import { once } from "node:events";
import type { Redis } from "ioredis";
import {
  createRedisClient,
  type RedisClient,
  type RedisClusterNode,
  type RedisRole,
} from "../../src/publication/redis-clients";
import { OwnRedisCluster } from "../../src/testing/redis-server";

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
 * How long a test's command may take before it fails: long, so an exactness test on a busy
 * machine (other processes on every core) waits for Redis instead of failing a decision it
 * asserts. A test of the timeout itself passes its own (`RELEASED_TIMEOUT_MS`).
 */
const TEST_COMMAND_TIMEOUT_MS = 10_000;

/** The `decisions` role's command timeout as gateways run it, for tests of the timeout itself. */
export const RELEASED_TIMEOUT_MS = 250;

/**
 * A client of `role` for this test run's Redis (`REDIS_URL`, set by setup-env.ts), once it is
 * ready; with `clusterNodes` (`host:port,...`, not empty) a Cluster client on them instead. The
 * `decisions` role has no offline queue, so a command sent before the connection is ready fails
 * at once: wait for it. Commands time out after {@link TEST_COMMAND_TIMEOUT_MS} unless
 * `commandTimeoutMs` says otherwise.
 */
export async function readyRedis(
  role: RedisRole,
  url?: string,
  clusterNodes?: "",
  commandTimeoutMs?: number,
): Promise<Redis>;
export async function readyRedis(
  role: RedisRole,
  url: string | undefined,
  clusterNodes: string,
  commandTimeoutMs?: number,
): Promise<RedisClient>;
export async function readyRedis(
  role: RedisRole,
  url?: string,
  clusterNodes = "",
  commandTimeoutMs = TEST_COMMAND_TIMEOUT_MS,
): Promise<RedisClient> {
  const client = createRedisClient(role, {
    url: url ?? process.env.REDIS_URL ?? "",
    clusterNodes: parseClusterNodes(clusterNodes),
    commandTimeoutMs,
  });
  if (client.status !== "ready") await once(client, "ready");
  return client;
}

/**
 * A Redis Cluster of the test's own for failover tests: three masters with a replica each,
 * `cluster-node-timeout` 3000 ms (shorter detection fails over spuriously on a busy machine, and
 * a replica frozen for a moment must not be taken for a failed node) and
 * `cluster-require-full-coverage no`, as docs/failover.md recommends.
 */
export function startReplicatedCluster(): Promise<OwnRedisCluster> {
  return OwnRedisCluster.start(3, {
    replicasPerMaster: 1,
    nodeTimeoutMs: 3_000,
    requireFullCoverage: false,
  });
}
