/**
 * The Redis topology this enforcer sees, for the console: the primary its connections reach (a
 * Cluster's masters), the replicas that primary reports, and the Sentinel master name; and each
 * change of primary it witnessed, recorded as a failover the console marks on its charts.
 *
 * Read on the control connection before every heartbeat: `ROLE` on a single Redis or Sentinel's
 * primary (one round trip; its replicas with their addresses), the client's node list on a
 * Cluster (no round trip). A failed read keeps the last topology: during an outage the heartbeat
 * cannot be written either.
 *
 * A failover is a primary that was seen, then replaced: on a change from one non-empty set of
 * primaries to another, one JSON member `{atMs, from, to, enforcerId}` goes into the
 * `redis:failovers` sorted set (scored by the enforcer's wall clock), and members older than 7
 * days are trimmed. Every enforcer records what it saw: the console merges their records.
 */
import type { Clock } from "../limiter/clock";
import type { EnforcerRedisNames } from "../publication/redis-keys";
import type { EnforcerLogger } from "./logger";

export type RedisTopologyMode = "single" | "sentinel" | "cluster";

export interface RedisTopology {
  readonly mode: RedisTopologyMode;
  /** `host:port` of the primary the connections reach; a Cluster's masters, sorted. */
  readonly primaries: readonly string[];
  /** `host:port` of the replicas the primary reports (a Cluster's replicas), sorted. */
  readonly replicas: readonly string[];
  /** Sentinel's master name; null without Sentinel. */
  readonly sentinelName: string | null;
}

/** One change of primary an enforcer saw (`redis:failovers`). */
export interface RedisFailoverEvent {
  readonly atMs: number;
  readonly from: string;
  readonly to: string;
  readonly enforcerId: string;
}

/** What the watcher sends: an ioredis `Redis` or `Cluster` satisfies it. */
export interface TopologyRedis {
  readonly status: string;
  readonly isCluster?: boolean;
  call(command: string, ...args: string[]): Promise<unknown>;
  zadd(key: string, score: number, member: string): Promise<unknown>;
  zremrangebyscore(key: string, min: string, max: number): Promise<unknown>;
}

/** The parts of a node list the watcher reads (ioredis `Cluster.nodes(role)`). */
interface ClusterNodeList {
  nodes(
    role: "master" | "slave",
  ): readonly { readonly options: { host?: string; port?: number } }[];
}

/** The parts of a connection the watcher reads (ioredis `Redis.stream`). */
interface ConnectedStream {
  readonly stream?: { readonly remoteAddress?: string; readonly remotePort?: number };
}

export interface RedisTopologyWatcherOptions {
  readonly redis: TopologyRedis;
  readonly names: Pick<EnforcerRedisNames, "redisFailovers">;
  readonly enforcerId: string;
  /** The Sentinel master name the connections follow; null without Sentinel. */
  readonly sentinelName: string | null;
  readonly wallClock: Clock;
  readonly logger: EnforcerLogger;
}

const FAILOVER_RETENTION_MS = 7 * 86_400_000;

/** `[role, ...]` of ROLE on a primary: `["master", offset, [[host, port, offset], ...]]`. */
function replicasOfRole(reply: unknown): string[] | null {
  if (!Array.isArray(reply) || reply[0] !== "master" || !Array.isArray(reply[2])) return null;
  const replicas: string[] = [];
  for (const entry of reply[2] as unknown[]) {
    if (Array.isArray(entry) && entry.length >= 2) replicas.push(`${entry[0]}:${entry[1]}`);
  }
  return replicas.sort();
}

function address(host: string | undefined, port: number | undefined): string {
  return `${host ?? "?"}:${port ?? "?"}`;
}

export class RedisTopologyWatcher {
  readonly #options: RedisTopologyWatcherOptions;
  #current: RedisTopology | null = null;
  #failoversSeen = 0;

  constructor(options: RedisTopologyWatcherOptions) {
    this.#options = options;
  }

  /** The topology at the last successful read; null before one. */
  get current(): RedisTopology | null {
    return this.#current;
  }

  /** Changes of primary this enforcer saw since it started. */
  get failoversSeen(): number {
    return this.#failoversSeen;
  }

  /** Reads the topology now, and records a failover when the primary changed. Never throws. */
  async refresh(): Promise<void> {
    const { redis, sentinelName } = this.#options;
    if (redis.status !== "ready") return;
    let next: RedisTopology;
    try {
      if (redis.isCluster === true) {
        const cluster = redis as unknown as ClusterNodeList;
        const list = (role: "master" | "slave") =>
          cluster
            .nodes(role)
            .map((node) => address(node.options.host, node.options.port))
            .sort();
        next = {
          mode: "cluster",
          primaries: list("master"),
          replicas: list("slave"),
          sentinelName: null,
        };
      } else {
        const replicas = replicasOfRole(await redis.call("ROLE"));
        // Not a primary (a demoted one, before the reconnect): nothing to report yet.
        if (replicas === null) return;
        const stream = (redis as unknown as ConnectedStream).stream;
        next = {
          mode: sentinelName === null ? "single" : "sentinel",
          primaries: [address(stream?.remoteAddress, stream?.remotePort)],
          replicas,
          sentinelName,
        };
      }
    } catch {
      return;
    }
    const previous = this.#current;
    this.#current = next;
    if (previous === null || previous.primaries.length === 0 || next.primaries.length === 0) {
      return;
    }
    const lost = previous.primaries.filter((primary) => !next.primaries.includes(primary));
    if (lost.length === 0) return;
    this.#failoversSeen++;
    await this.#record({
      atMs: this.#options.wallClock.nowMs(),
      from: previous.primaries.join(","),
      to: next.primaries.join(","),
      enforcerId: this.#options.enforcerId,
    });
  }

  async #record(event: RedisFailoverEvent): Promise<void> {
    const { redis, names, logger } = this.#options;
    logger.log("warn", "Redis primary changed: a failover", { from: event.from, to: event.to });
    try {
      await redis.zadd(names.redisFailovers, event.atMs, JSON.stringify(event));
      await redis.zremrangebyscore(
        names.redisFailovers,
        "-inf",
        event.atMs - FAILOVER_RETENTION_MS,
      );
    } catch {
      // The heartbeat says the rest; a lost record only loses a chart marker.
    }
  }
}
