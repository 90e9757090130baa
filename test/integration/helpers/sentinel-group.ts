/**
 * A Redis behind Sentinel of the test's own: one primary, replicas and sentinels (the Debian
 * `redis-server` binary run with `--sentinel`), every one on a free port, nothing on disk but the
 * sentinels' config files in a scratch directory. The shared Redis on 6379 is never touched.
 *
 * `start` resolves once every replica is in sync and every sentinel knows every replica and every
 * other sentinel, so a failover can be authorised from the first second. The failure detection is
 * `down-after-milliseconds` (3000 by default: faster detection makes a busy two-core machine fail
 * over spuriously).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort, waitFor } from "@limitplane/enforcer/testing";
import { Redis } from "ioredis";

interface ServerProcess {
  readonly port: number;
  process: ChildProcess | undefined;
}

/** What `INFO replication` on a primary says about one replica. */
export interface ReplicaLag {
  readonly port: number;
  /** Replication offset the replica last acknowledged, in bytes of the stream. */
  readonly offset: number;
  /** Seconds since that acknowledgement (Redis rounds down; replicas acknowledge every second). */
  readonly lagSec: number;
}

/** `INFO replication` of a primary: its offset and each replica's acknowledged offset and lag. */
export interface PrimaryReplication {
  readonly primaryOffset: number;
  readonly replicas: readonly ReplicaLag[];
}

export interface SentinelGroupOptions {
  /** @default "limitplane" */
  readonly masterName?: string;
  /** @default 2 */
  readonly replicas?: number;
  /** @default 3 */
  readonly sentinels?: number;
  /** @default 3000 */
  readonly downAfterMs?: number;
}

export class SentinelGroup {
  readonly masterName: string;
  readonly #servers: ServerProcess[];
  readonly #sentinels: ServerProcess[];
  readonly #directory: string;

  private constructor(
    masterName: string,
    servers: ServerProcess[],
    sentinels: ServerProcess[],
    directory: string,
  ) {
    this.masterName = masterName;
    this.#servers = servers;
    this.#sentinels = sentinels;
    this.#directory = directory;
  }

  static async start(options: SentinelGroupOptions = {}): Promise<SentinelGroup> {
    const masterName = options.masterName ?? "limitplane";
    const directory = await mkdtemp(path.join(tmpdir(), "lp-sentinel-"));
    const ports = new Set<number>();
    const distinctPort = async () => {
      for (;;) {
        const port = await freePort();
        if (!ports.has(port)) {
          ports.add(port);
          return port;
        }
      }
    };
    const servers: ServerProcess[] = [];
    for (let i = 0; i < 1 + (options.replicas ?? 2); i++) {
      servers.push({ port: await distinctPort(), process: undefined });
    }
    const sentinels: ServerProcess[] = [];
    for (let i = 0; i < (options.sentinels ?? 3); i++) {
      sentinels.push({ port: await distinctPort(), process: undefined });
    }
    const group = new SentinelGroup(masterName, servers, sentinels, directory);
    try {
      const [primary, ...replicas] = servers;
      if (primary === undefined) throw new Error("no primary");
      primary.process = await spawnServer(primary.port, serverArgs(primary.port));
      await Promise.all(
        replicas.map(async (replica) => {
          replica.process = await spawnServer(replica.port, [
            ...serverArgs(replica.port),
            "--replicaof",
            "127.0.0.1",
            String(primary.port),
          ]);
        }),
      );
      const quorum = Math.floor(sentinels.length / 2) + 1;
      await Promise.all(
        sentinels.map(async (sentinel) => {
          const file = path.join(directory, `sentinel-${sentinel.port}.conf`);
          await writeFile(
            file,
            [
              `port ${sentinel.port}`,
              "bind 127.0.0.1",
              `dir ${directory}`,
              `sentinel monitor ${masterName} 127.0.0.1 ${primary.port} ${quorum}`,
              `sentinel down-after-milliseconds ${masterName} ${options.downAfterMs ?? 3_000}`,
              `sentinel failover-timeout ${masterName} 10000`,
              `sentinel parallel-syncs ${masterName} 2`,
              "",
            ].join("\n"),
          );
          sentinel.process = await spawnServer(sentinel.port, [file, "--sentinel"]);
        }),
      );
      await group.#waitUntilWatched(replicas.length, sentinels.length - 1);
    } catch (error: unknown) {
      await group.stop();
      throw error;
    }
    return group;
  }

  /** `REDIS_SENTINELS`'s text. */
  get sentinelsText(): string {
    return this.#sentinels.map((sentinel) => `127.0.0.1:${sentinel.port}`).join(",");
  }

  get sentinelNodes(): { host: string; port: number }[] {
    return this.#sentinels.map((sentinel) => ({ host: "127.0.0.1", port: sentinel.port }));
  }

  /** The primary's port as the first sentinel that answers names it. */
  async primaryPort(): Promise<number> {
    for (const sentinel of this.#sentinels) {
      if (sentinel.process === undefined) continue;
      const reply = await withClient(sentinel.port, (client) =>
        client.call("SENTINEL", "get-master-addr-by-name", this.masterName),
      ).catch(() => null);
      if (Array.isArray(reply) && typeof reply[1] === "string") return Number(reply[1]);
    }
    throw new Error("no sentinel names a primary");
  }

  /** `INFO replication` of the server on `port`, parsed. */
  async replication(port: number): Promise<PrimaryReplication> {
    const info = await withClient(port, (client) => client.info("replication"));
    const primaryOffset = Number(/master_repl_offset:(\d+)/.exec(info)?.[1] ?? Number.NaN);
    const replicas: ReplicaLag[] = [];
    for (const match of info.matchAll(/^slave\d+:(.*)$/gm)) {
      const fields = Object.fromEntries(
        (match[1] ?? "").split(",").map((pair) => pair.trim().split("=") as [string, string]),
      );
      replicas.push({
        port: Number(fields.port),
        offset: Number(fields.offset),
        lagSec: Number(fields.lag),
      });
    }
    return { primaryOffset, replicas };
  }

  /** `kill -9` of the server on `port`: no goodbye to its clients or replicas. */
  async kill(port: number): Promise<void> {
    const server = this.#servers.find((candidate) => candidate.port === port);
    const child = server?.process;
    if (server === undefined || child === undefined) throw new Error(`no server on ${port}`);
    server.process = undefined;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, "exit");
    child.kill("SIGKILL");
    await exited;
  }

  /** The ports of the servers other than `primaryPort` that are running (the replicas). */
  replicaPorts(primaryPort: number): number[] {
    return this.#servers
      .filter((server) => server.port !== primaryPort && server.process !== undefined)
      .map((server) => server.port);
  }

  /**
   * Freezes the server on `port` (SIGSTOP): its connections stay open and nothing is answered, so
   * a frozen replica acknowledges nothing. {@link resume} lets it go on.
   */
  pause(port: number): void {
    this.#runningProcess(port).kill("SIGSTOP");
  }

  resume(port: number): void {
    this.#runningProcess(port).kill("SIGCONT");
  }

  /**
   * Closes the replication links of the primary on `port` (`CLIENT KILL TYPE replica`) and
   * resolves with how many it closed. With its replicas frozen ({@link pause}) none reconnects,
   * so the primary's writes from then on reach no replica: the replication lag a failover loses.
   */
  async cutReplicaLinks(port: number): Promise<number> {
    return Number(
      await withClient(port, (client) => client.call("CLIENT", "KILL", "TYPE", "replica")),
    );
  }

  #runningProcess(port: number): ChildProcess {
    const child = this.#servers.find((server) => server.port === port)?.process;
    if (child === undefined) throw new Error(`no server running on ${port}`);
    return child;
  }

  /** Stops every process and removes the scratch directory. */
  async stop(): Promise<void> {
    await Promise.all([...this.#sentinels, ...this.#servers].map(stopProcess));
    await rm(this.#directory, { recursive: true, force: true });
  }

  async #waitUntilWatched(replicas: number, otherSentinels: number): Promise<void> {
    await waitFor(
      `every sentinel to see ${replicas} replicas in sync and ${otherSentinels} other sentinels`,
      async () => {
        const states = await Promise.all(
          this.#sentinels.map((sentinel) =>
            withClient(sentinel.port, (client) =>
              client.call("SENTINEL", "master", this.masterName),
            ).catch(() => null),
          ),
        );
        const isWatched = states.every((state) => {
          if (!Array.isArray(state)) return false;
          const fields = new Map<string, string>();
          for (let i = 0; i + 1 < state.length; i += 2) {
            fields.set(String(state[i]), String(state[i + 1]));
          }
          return (
            Number(fields.get("num-slaves")) === replicas &&
            Number(fields.get("num-other-sentinels")) === otherSentinels
          );
        });
        if (!isWatched) return undefined;
        const primary = this.#servers[0];
        if (primary === undefined) return undefined;
        const replication = await this.replication(primary.port);
        return replication.replicas.length === replicas ? true : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
  }
}

function serverArgs(port: number): string[] {
  return [
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--save",
    "",
    "--appendonly",
    "no",
    "--repl-diskless-sync",
    "yes",
    "--repl-diskless-sync-delay",
    "0",
  ];
}

/** Starts `redis-server args` and resolves once it answers PING on `port`. */
async function spawnServer(port: number, args: readonly string[]): Promise<ChildProcess> {
  const child = spawn("redis-server", args, { stdio: "ignore" });
  await waitFor(
    `redis-server on ${port}`,
    async () => {
      if (child.exitCode !== null) throw new Error(`redis-server on ${port} exited`);
      const reply = await withClient(port, (client) => client.ping()).catch(() => null);
      return reply === "PONG" ? true : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 50 },
  );
  return child;
}

/** A one-shot connection that never retries (a probe, not a client of the product). */
async function withClient<T>(port: number, use: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis({
    port,
    host: "127.0.0.1",
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    connectTimeout: 1_000,
    commandTimeout: 2_000,
    retryStrategy: () => null,
  });
  client.on("error", () => {});
  try {
    await client.connect();
    return await use(client);
  } finally {
    client.disconnect();
  }
}

async function stopProcess(server: ServerProcess): Promise<void> {
  const child = server.process;
  server.process = undefined;
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.kill("SIGKILL");
  await exited;
}
