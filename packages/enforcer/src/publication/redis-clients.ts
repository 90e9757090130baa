/**
 * The one place that creates ioredis clients: the console, the worker and the enforcers all call
 * it (the app's `lib/server/redis.ts` only fills in the URL and the Cluster nodes from its
 * environment). Each client has a role, and each role has timeouts and reconnect behaviour chosen
 * for what it does:
 *
 * | role        | used by                              | when Redis is down                        |
 * | ----------- | ------------------------------------ | ----------------------------------------- |
 * | `decisions` | the enforcer's hot path              | commands fail at once (no offline queue,  |
 * |             |                                      | no retries) so the failure policy decides |
 * | `control`   | console pages, publisher, worker     | commands wait up to `commandTimeoutMs`    |
 * |             |                                      | (queued while reconnecting), then fail    |
 * | `subscriber`| snapshot announcements (pub/sub)     | reconnects forever and resubscribes       |
 *
 * Every role reconnects by itself with capped exponential backoff (50 ms doubling to 2 s), so a
 * Redis restart heals without a process restart. Nothing waits forever: connecting is bounded by
 * `connectTimeout` and every command by `commandTimeout`.
 *
 * **Redis Cluster.** With `clusterNodes` the client is an ioredis `Cluster` seeded with those
 * nodes (it discovers the rest), with the same role settings on every node connection. The URL
 * then says only how to talk to the nodes: `rediss://` turns TLS on, and its username and
 * password authenticate to every node; its host, port and database are not used (a Cluster has
 * database 0 only). Pub/sub works across a Cluster (a message published on any node reaches
 * subscribers on every node).
 */
import { Cluster, type ClusterOptions, Redis, type RedisOptions } from "ioredis";

export type RedisRole = "decisions" | "control" | "subscriber";

/** A client of either kind: one Redis, or a Redis Cluster. */
export type RedisClient = Redis | Cluster;

/** A Redis Cluster node to start from. */
export interface RedisClusterNode {
  readonly host: string;
  readonly port: number;
}

export interface CreateRedisOptions {
  /**
   * `redis://` or `rediss://` URL of the shared Redis. With `clusterNodes`, only its scheme (TLS)
   * and credentials are used.
   */
  url: string;
  /**
   * Seed nodes of a Redis Cluster. Given (and not empty), the client is an ioredis `Cluster`.
   * @default none: one Redis at `url`
   */
  clusterNodes?: readonly RedisClusterNode[];
  /** Per-command deadline. @default 5000 for control, 250 for decisions, none for subscriber */
  commandTimeoutMs?: number;
  /** Shown in `CLIENT LIST`, which helps at three in the morning. */
  connectionName?: string;
}

/** Delay before reconnect attempt `attempt` (1-based): 50 ms doubling, capped at 2 s. */
export function reconnectDelayMs(attempt: number): number {
  return Math.min(2_000, 50 * 2 ** Math.min(attempt - 1, 6));
}

export function redisOptionsFor(
  role: RedisRole,
  options: Omit<CreateRedisOptions, "url" | "clusterNodes"> = {},
): RedisOptions {
  const common: RedisOptions = {
    connectTimeout: 2_000,
    retryStrategy: reconnectDelayMs,
    // Never keep a half-open socket for minutes: detect a dead peer within ~15 s.
    keepAlive: 5_000,
    lazyConnect: false,
    connectionName: options.connectionName ?? `limitplane-${role}`,
  };
  switch (role) {
    case "decisions":
      return {
        ...common,
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        commandTimeout: options.commandTimeoutMs ?? 250,
        autoResendUnfulfilledCommands: false,
      };
    case "control":
      return {
        ...common,
        enableOfflineQueue: true,
        maxRetriesPerRequest: 1,
        // Five seconds, not one: on a busy host (a shared CI core, a console under load) a healthy
        // Redis can answer a snapshot write late, and a control command failing then only means a
        // retry later. Nothing on the decision path uses this role.
        commandTimeout: options.commandTimeoutMs ?? 5_000,
      };
    case "subscriber":
      return {
        ...common,
        enableOfflineQueue: true,
        maxRetriesPerRequest: null,
        autoResubscribe: true,
      };
    default: {
      const unknownRole: never = role;
      throw new Error(`unknown Redis role ${String(unknownRole)}`);
    }
  }
}

/**
 * The Cluster options for `role`: the role's settings on every node connection, TLS and
 * credentials from `url`, and the client-level offline queue the role wants (none for decisions:
 * they fail at once while the Cluster is not ready, and the failure policy decides).
 */
export function clusterOptionsFor(
  role: RedisRole,
  options: Omit<CreateRedisOptions, "clusterNodes">,
): ClusterOptions {
  const {
    retryStrategy,
    enableOfflineQueue,
    lazyConnect: _lazyConnect,
    ...perNode
  } = redisOptionsFor(role, options);
  const url = new URL(options.url);
  const auth: RedisOptions = {};
  if (url.username !== "") auth.username = decodeURIComponent(url.username);
  if (url.password !== "") auth.password = decodeURIComponent(url.password);
  if (url.protocol === "rediss:") auth.tls = {};
  return {
    redisOptions: { ...perNode, ...auth },
    enableOfflineQueue,
    // The whole Cluster unreachable: try again with the same backoff as a single Redis.
    clusterRetryStrategy: (attempt: number) => reconnectDelayMs(attempt),
    // A node whose connection closed (restarted, not failed over) reconnects by itself.
    clusterNodeRetryStrategy: retryStrategy ?? reconnectDelayMs,
    slotsRefreshTimeout: 2_000,
  };
}

/** A new client of one Redis for `role`. The caller owns it and must `quit()` it. */
export function createRedisClient(
  role: RedisRole,
  options: CreateRedisOptions & { clusterNodes?: undefined },
): Redis;
/** A new client for `role`: a Cluster when `clusterNodes` lists any. The caller must `quit()` it. */
export function createRedisClient(role: RedisRole, options: CreateRedisOptions): RedisClient;
export function createRedisClient(role: RedisRole, options: CreateRedisOptions): RedisClient {
  const nodes = options.clusterNodes ?? [];
  const client: RedisClient =
    nodes.length > 0
      ? new Cluster(
          nodes.map((node) => ({ host: node.host, port: node.port })),
          clusterOptionsFor(role, options),
        )
      : new Redis(options.url, redisOptionsFor(role, options));
  // ioredis emits "error" on every failed reconnect; an unhandled "error" event would crash the
  // process. Callers that care observe `status` or the failing commands instead.
  client.on("error", () => {});
  if (client instanceof Cluster) client.on("node error", () => {});
  return client;
}
