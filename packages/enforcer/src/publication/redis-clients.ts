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
 * Redis restart heals without a process restart, and reconnects at once when a demoted primary
 * answers `READONLY` (`reconnectOnReadOnly`). Nothing waits forever: connecting is bounded by
 * `connectTimeout` and every command by `commandTimeout`.
 *
 * **Redis Cluster.** With `clusterNodes` the client is an ioredis `Cluster` seeded with those
 * nodes (it discovers the rest), with the same role settings on every node connection. The URL
 * then says only how to talk to the nodes: `rediss://` turns TLS on, and its username and
 * password authenticate to every node; its host, port and database are not used (a Cluster has
 * database 0 only). Pub/sub works across a Cluster (a message published on any node reaches
 * subscribers on every node).
 *
 * **Redis Sentinel.** With `sentinel` the client asks the sentinels where the primary of
 * `sentinel.name` is and connects there; when that connection drops, or a sentinel announces
 * `+switch-master`, it asks again, so a promoted replica is found without a restart (pub/sub
 * connections resubscribe on it). The URL then says how to talk to the primary: `rediss://` for
 * TLS, its username, password and database; its host and port are not used. What a failover
 * costs is in docs/failover.md.
 */
import { Cluster, type ClusterOptions, Redis, type RedisOptions } from "ioredis";

export type RedisRole = "decisions" | "control" | "subscriber";

/** A client of either kind: one Redis, or a Redis Cluster. */
export type RedisClient = Redis | Cluster;

/** A Redis Cluster node to start from, or a sentinel to ask. */
export interface RedisClusterNode {
  readonly host: string;
  readonly port: number;
}

/** Where a Sentinel-managed Redis is: the sentinels to ask and the master group they watch. */
export interface RedisSentinelOptions {
  /** Sentinels to ask, in order (one is enough to find the primary; list them all). */
  readonly nodes: readonly RedisClusterNode[];
  /** The master group name, as in the sentinels' `sentinel monitor <name> ...`. */
  readonly name: string;
  /** ACL user for the sentinels themselves (not the primary: that is the URL's). @default none */
  readonly username?: string;
  /** Password for the sentinels themselves. @default none */
  readonly password?: string;
  /** TLS to the sentinels themselves (TLS to the primary follows the URL's `rediss://`). @default false */
  readonly tls?: boolean;
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
  /**
   * A Sentinel deployment: the client connects to the primary the sentinels name. Not with
   * `clusterNodes`.
   * @default none: one Redis at `url`
   */
  sentinel?: RedisSentinelOptions;
  /** Per-command deadline. @default 5000 for control, 250 for decisions, none for subscriber */
  commandTimeoutMs?: number;
  /** Shown in `CLIENT LIST`, which helps at three in the morning. */
  connectionName?: string;
}

/** Delay before reconnect attempt `attempt` (1-based): 50 ms doubling, capped at 2 s. */
export function reconnectDelayMs(attempt: number): number {
  return Math.min(2_000, 50 * 2 ** Math.min(attempt - 1, 6));
}

/**
 * A `READONLY` reply means the server this connection reached is a replica now: the primary was
 * demoted (how managed services and a healed partition fail over). It is a failover, not an error
 * to retry on the same connection: reconnect (through the sentinels, or the URL's name resolved
 * again) and do not resend (1, not 2): the command that failed is decided by the failure policy,
 * and a decision is never sent twice.
 */
export function reconnectOnReadOnly(error: Error): 1 | false {
  return error.message.startsWith("READONLY") ? 1 : false;
}

export function redisOptionsFor(
  role: RedisRole,
  options: Omit<CreateRedisOptions, "url" | "clusterNodes" | "sentinel"> = {},
): RedisOptions {
  const common: RedisOptions = {
    connectTimeout: 2_000,
    retryStrategy: reconnectDelayMs,
    reconnectOnError: reconnectOnReadOnly,
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
  options: Omit<CreateRedisOptions, "clusterNodes" | "sentinel">,
): ClusterOptions {
  const {
    retryStrategy,
    enableOfflineQueue,
    lazyConnect: _lazyConnect,
    ...perNode
  } = redisOptionsFor(role, options);
  return {
    redisOptions: { ...perNode, ...urlAuthOptions(options.url) },
    enableOfflineQueue,
    // The whole Cluster unreachable: try again with the same backoff as a single Redis.
    clusterRetryStrategy: (attempt: number) => reconnectDelayMs(attempt),
    // A node whose connection closed (restarted, not failed over) reconnects by itself.
    clusterNodeRetryStrategy: retryStrategy ?? reconnectDelayMs,
    slotsRefreshTimeout: 2_000,
  };
}

/** TLS and credentials from a `redis://` or `rediss://` URL (its host, port and database aside). */
function urlAuthOptions(text: string): RedisOptions {
  const url = new URL(text);
  const auth: RedisOptions = {};
  if (url.username !== "") auth.username = decodeURIComponent(url.username);
  if (url.password !== "") auth.password = decodeURIComponent(url.password);
  if (url.protocol === "rediss:") auth.tls = {};
  return auth;
}

/**
 * The Sentinel options for `role`: the role's settings on the primary's connection, TLS,
 * credentials and database from `url`, and the sentinels asked with the same backoff. The
 * failover detector listens to the sentinels' `+switch-master`, so a primary that is demoted
 * without its connection dropping (a partition healed, a manual `SENTINEL FAILOVER`) is left at
 * once instead of answering READONLY.
 */
export function sentinelOptionsFor(
  role: RedisRole,
  options: Omit<CreateRedisOptions, "clusterNodes"> & { sentinel: RedisSentinelOptions },
): RedisOptions {
  const { sentinel } = options;
  const database = new URL(options.url).pathname.replace(/^\//, "");
  const sentinelAuth: RedisOptions = {};
  if (sentinel.username !== undefined) sentinelAuth.sentinelUsername = sentinel.username;
  if (sentinel.password !== undefined) sentinelAuth.sentinelPassword = sentinel.password;
  if (sentinel.tls === true) sentinelAuth.sentinelTLS = {};
  return {
    ...redisOptionsFor(role, options),
    ...urlAuthOptions(options.url),
    ...sentinelAuth,
    db: database === "" ? 0 : Number(database),
    sentinels: sentinel.nodes.map((node) => ({ host: node.host, port: node.port })),
    name: sentinel.name,
    role: "master",
    // The URL's rediss:// is TLS to the primary; without this ioredis drops it in Sentinel mode.
    enableTLSForSentinelMode: new URL(options.url).protocol === "rediss:",
    sentinelRetryStrategy: reconnectDelayMs,
    sentinelCommandTimeout: 1_000,
    failoverDetector: true,
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
  const { sentinel } = options;
  if (nodes.length > 0 && sentinel !== undefined) {
    throw new TypeError("give clusterNodes or sentinel, not both");
  }
  let client: RedisClient;
  if (nodes.length > 0) {
    client = new Cluster(
      nodes.map((node) => ({ host: node.host, port: node.port })),
      clusterOptionsFor(role, options),
    );
  } else if (sentinel !== undefined) {
    client = new Redis(sentinelOptionsFor(role, { ...options, sentinel }));
  } else {
    client = new Redis(options.url, redisOptionsFor(role, options));
  }
  // ioredis emits "error" on every failed reconnect; an unhandled "error" event would crash the
  // process. Callers that care observe `status` or the failing commands instead.
  client.on("error", () => {});
  if (client instanceof Cluster) client.on("node error", () => {});
  return client;
}
