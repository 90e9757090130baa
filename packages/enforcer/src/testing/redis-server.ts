import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";

/** A port nobody listens on right now, chosen by the kernel. */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  server.close();
  await once(server, "close");
  if (address === null || typeof address === "string") throw new Error("no TCP address");
  return address.port;
}

/** redis-server's arguments for a private server on `port`: loopback only, nothing on disk. */
export function privateRedisServerArgs(port: number): string[] {
  return ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"];
}

/**
 * A redis-server of the test's own, on a free port, with no persistence: for tests that stop,
 * pause, restart or flush Redis, which must never happen to the shared server on 6379. Every
 * method waits for what it changed to be observable (the server ready, or the process gone).
 */
export class OwnRedisServer {
  readonly port: number;
  readonly #extraArgs: readonly string[];
  #process: ChildProcess | undefined;

  private constructor(port: number, extraArgs: readonly string[]) {
    this.port = port;
    this.#extraArgs = extraArgs;
  }

  /**
   * A server on a free port; with `replicaOf`, a replica of the server on that port (diskless
   * sync without delay).
   */
  static async start(options: { readonly replicaOf?: number } = {}): Promise<OwnRedisServer> {
    const extraArgs =
      options.replicaOf === undefined
        ? []
        : [
            "--replicaof",
            "127.0.0.1",
            String(options.replicaOf),
            // Load the primary's data from the socket: nothing written to the working directory.
            "--repl-diskless-load",
            "on-empty-db",
          ];
    const server = new OwnRedisServer(await freePort(), extraArgs);
    await server.restart();
    return server;
  }

  /** The process's id, for a test that signals it itself (SIGKILL, SIGSTOP). */
  get pid(): number | undefined {
    return this.#process?.pid;
  }

  /** Kills the server with SIGKILL (no shutdown, nothing flushed) and waits for it to exit. */
  async kill(): Promise<void> {
    const child = this.#process;
    if (child === undefined) return;
    this.#process = undefined;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, "exit");
    child.kill("SIGKILL");
    await exited;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}/0`;
  }

  /** Starts the server (again) on the same port and resolves once it accepts connections. */
  async restart(): Promise<void> {
    if (this.#process !== undefined) throw new Error("the server is already running");
    this.#process = await spawnRedisServer([
      ...privateRedisServerArgs(this.port),
      // A primary's replicas sync at once rather than after the default 5 s delay.
      "--repl-diskless-sync-delay",
      "0",
      ...this.#extraArgs,
    ]);
  }

  /** Stops the server and resolves once its process has exited. */
  async stop(): Promise<void> {
    const child = this.#process;
    if (child === undefined) return;
    this.#process = undefined;
    if (child.exitCode !== null) return;
    const exited = once(child, "exit");
    child.kill("SIGCONT"); // a paused server would not act on SIGTERM
    child.kill("SIGTERM");
    await exited;
  }

  /** Freezes the server (SIGSTOP): connections stay open and nothing is answered. */
  pause(): void {
    this.#process?.kill("SIGSTOP");
  }

  resume(): void {
    this.#process?.kill("SIGCONT");
  }
}

/** One node of an {@link OwnRedisCluster}. */
interface ClusterNodeProcess {
  readonly port: number;
  readonly busPort: number;
  process: ChildProcess | undefined;
}

/**
 * A Redis Cluster of the test's own: three masters (no replicas) on free ports, each with its
 * cluster bus on another free port, nothing on disk but the nodes' cluster config in a scratch
 * directory. Started with `redis-server --cluster-enabled yes` and joined with
 * `redis-cli --cluster create`; `start` resolves once every node reports `cluster_state:ok`.
 * For the Cluster tests only: the shared Redis on 6379 is never touched.
 */
export class OwnRedisCluster {
  readonly #nodes: ClusterNodeProcess[];
  readonly #directory: string;

  readonly #settings: readonly string[];

  private constructor(nodes: ClusterNodeProcess[], directory: string, settings: readonly string[]) {
    this.#nodes = nodes;
    this.#directory = directory;
    this.#settings = settings;
  }

  /**
   * Starts `masters` nodes (3 by default), each with `options.replicasPerMaster` replicas (none by
   * default), creates the Cluster and waits until it is ok. `nodeTimeoutMs` is the
   * `cluster-node-timeout` (2000 by default; 3000 or more where a failover is tested, or a busy
   * machine fails over spuriously), `requireFullCoverage` the `cluster-require-full-coverage`.
   */
  static async start(
    masters = 3,
    options: {
      readonly replicasPerMaster?: number;
      readonly nodeTimeoutMs?: number;
      readonly requireFullCoverage?: boolean;
    } = {},
  ): Promise<OwnRedisCluster> {
    const { mkdtemp } = await import("node:fs/promises");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const directory = await mkdtemp(join(tmpdir(), "lp-cluster-"));
    const nodes: ClusterNodeProcess[] = [];
    const used = new Set<number>();
    const distinctPort = async () => {
      for (;;) {
        const port = await freePort();
        if (!used.has(port)) {
          used.add(port);
          return port;
        }
      }
    };
    const replicas = options.replicasPerMaster ?? 0;
    for (let i = 0; i < masters * (1 + replicas); i++) {
      nodes.push({ port: await distinctPort(), busPort: await distinctPort(), process: undefined });
    }
    const cluster = new OwnRedisCluster(nodes, directory, [
      "--cluster-node-timeout",
      String(options.nodeTimeoutMs ?? 2_000),
      "--cluster-require-full-coverage",
      options.requireFullCoverage === false ? "no" : "yes",
      // A replica that has never finished its first sync refuses to be promoted (its data counts
      // as too old), and Redis waits 5 s by default before a diskless sync starts.
      "--repl-diskless-sync-delay",
      "0",
    ]);
    try {
      await Promise.all(nodes.map((node) => cluster.#startNode(node)));
      await run("redis-cli", [
        "--cluster",
        "create",
        ...nodes.map((node) => `127.0.0.1:${node.port}`),
        "--cluster-replicas",
        String(replicas),
        "--cluster-yes",
      ]);
      await cluster.waitUntilOk();
      if (replicas > 0) await cluster.#waitUntilReplicasSynced();
    } catch (error: unknown) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  /** The seed nodes, as `REDIS_CLUSTER_NODES` and `createRedisClient` take them. */
  get nodes(): { host: string; port: number }[] {
    return this.#nodes.map((node) => ({ host: "127.0.0.1", port: node.port }));
  }

  /** `REDIS_CLUSTER_NODES`'s text for this Cluster. */
  get nodesText(): string {
    return this.#nodes.map((node) => `127.0.0.1:${node.port}`).join(",");
  }

  /** Resolves once every running node says `cluster_state:ok`. */
  async waitUntilOk(): Promise<void> {
    const deadline = performance.now() + 30_000;
    for (;;) {
      const states = await Promise.all(
        this.#nodes
          .filter((node) => node.process !== undefined)
          .map((node) =>
            run("redis-cli", ["-p", String(node.port), "cluster", "info"]).catch(() => ""),
          ),
      );
      if (states.every((info) => info.includes("cluster_state:ok"))) return;
      if (performance.now() > deadline) {
        throw new Error(`the Cluster did not become ok: ${states.join(" | ")}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** Resolves once every replica's link to its master is up (its first sync is done). */
  async #waitUntilReplicasSynced(): Promise<void> {
    const deadline = performance.now() + 30_000;
    for (;;) {
      const roles = await Promise.all(
        this.#nodes.map((node) =>
          run("redis-cli", ["-p", String(node.port), "info", "replication"]).catch(() => ""),
        ),
      );
      const waiting = roles.filter(
        (info) => info.includes("role:slave") && !info.includes("master_link_status:up"),
      );
      if (waiting.length === 0) return;
      if (performance.now() > deadline) {
        throw new Error(`${waiting.length} replica(s) did not finish their first sync`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** The port of the master that serves `slot` now, as the first running node sees it. */
  async masterPortOf(slot: number): Promise<number> {
    const running = this.#nodes.find((node) => node.process !== undefined);
    if (running === undefined) throw new Error("no node is running");
    const table = await run("redis-cli", ["-p", String(running.port), "cluster", "nodes"]);
    for (const line of table.split("\n")) {
      const fields = line.trim().split(" ");
      if (!fields[2]?.includes("master") || fields[2].includes("fail")) continue;
      const port = Number(/:(\d+)@/.exec(fields[1] ?? "")?.[1]);
      for (const range of fields.slice(8)) {
        const [from, to] = range.split("-").map(Number);
        if (from !== undefined && slot >= from && slot <= (to ?? from)) return port;
      }
    }
    throw new Error(`no master serves slot ${slot}`);
  }

  /** The ports of the replicas the master on `masterPort` reports connected (`INFO replication`). */
  async replicaPortsOf(masterPort: number): Promise<number[]> {
    const info = await run("redis-cli", ["-p", String(masterPort), "info", "replication"]);
    return [...info.matchAll(/^slave\d+:.*\bport=(\d+)/gm)].map((match) => Number(match[1]));
  }

  /**
   * Freezes the node on `port` (SIGSTOP): its connections stay open and nothing is answered; a
   * replica frozen so acknowledges nothing. {@link resumePort} lets it go on.
   */
  pausePort(port: number): void {
    this.#runningProcess(port).kill("SIGSTOP");
  }

  resumePort(port: number): void {
    this.#runningProcess(port).kill("SIGCONT");
  }

  #runningProcess(port: number): ChildProcess {
    const child = this.#nodes.find((candidate) => candidate.port === port)?.process;
    if (child === undefined) throw new Error(`no node running on ${port}`);
    return child;
  }

  /** Kills the node on `port` with SIGKILL (no goodbye to its replicas or clients). */
  async killPort(port: number): Promise<void> {
    const node = this.#nodes.find((candidate) => candidate.port === port);
    const child = node?.process;
    if (node === undefined || child === undefined) throw new Error(`no node on ${port}`);
    node.process = undefined;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, "exit");
    child.kill("SIGKILL");
    await exited;
  }

  /**
   * Starts the node on `port` again after {@link killPort}, with its cluster config (its node id)
   * and no data: a master that was failed over meanwhile rejoins as its replacement's replica.
   */
  async restartPort(port: number): Promise<void> {
    const node = this.#nodes.find((candidate) => candidate.port === port);
    if (node === undefined) throw new Error(`no node on ${port}`);
    if (node.process !== undefined) throw new Error(`the node on ${port} is running`);
    await this.#startNode(node);
  }

  /** Stops one node (its process exits): the slots it served become unreachable. */
  async stopNode(index: number): Promise<void> {
    const node = this.#nodes[index];
    if (node === undefined) throw new RangeError(`no node ${index}`);
    await stopProcess(node);
  }

  /** Stops every node and removes the scratch directory. */
  async stop(): Promise<void> {
    await Promise.all(this.#nodes.map((node) => stopProcess(node)));
    const { rm } = await import("node:fs/promises");
    await rm(this.#directory, { recursive: true, force: true });
  }

  async #startNode(node: ClusterNodeProcess): Promise<void> {
    node.process = await spawnRedisServer([
      "--port",
      String(node.port),
      "--cluster-port",
      String(node.busPort),
      "--bind",
      "127.0.0.1",
      "--cluster-enabled",
      "yes",
      "--cluster-config-file",
      `nodes-${node.port}.conf`,
      ...this.#settings,
      "--dir",
      this.#directory,
      "--save",
      "",
      "--appendonly",
      "no",
    ]);
  }
}

/** Starts `redis-server` with `args` and resolves with its process once it accepts connections. */
async function spawnRedisServer(args: readonly string[]): Promise<ChildProcess> {
  const child = spawn("redis-server", args, { stdio: ["ignore", "pipe", "inherit"] });
  await new Promise<void>((resolve, reject) => {
    let output = "";
    const onData = (chunk: Buffer) => {
      output += chunk.toString("utf8");
      if (output.includes("Ready to accept connections")) {
        child.stdout?.off("data", onData);
        child.stdout?.resume();
        resolve();
      }
    };
    child.stdout?.on("data", onData);
    child.once("exit", (code) =>
      reject(new Error(`redis-server exited with ${code} before it was ready:\n${output}`)),
    );
  });
  return child;
}

async function stopProcess(node: ClusterNodeProcess): Promise<void> {
  const child = node.process;
  node.process = undefined;
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.kill("SIGCONT"); // a paused node would not act on SIGTERM
  child.kill("SIGTERM");
  await exited;
}

/** Runs a command to completion and resolves with its output; rejects on a non-zero exit. */
function run(command: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8");
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8");
    });
    child.once("error", reject);
    child.once("exit", (code) => {
      if (code === 0) resolve(output);
      else reject(new Error(`${command} ${args.join(" ")} exited with ${code}: ${output}`));
    });
  });
}
