/**
 * Real processes for the enforcer's integration tests: demo gateways (`scripts/gateway.ts`) on
 * ports the OS picks, a private `redis-server` a test may stop and start, a key prefix per test
 * file, and polling with a deadline (never a fixed sleep).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { type Agent, request } from "node:http";
import { createServer } from "node:net";
import path from "node:path";
import { waitFor } from "@limitplane/enforcer/testing";
import { Redis } from "ioredis";
import { inject } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../../..");

/**
 * A Redis key prefix of this test file's own under the run's (which the global setup deletes at
 * the end), so files running in parallel never see each other's policy or buckets.
 */
export function filePrefix(tag: string): string {
  const prefix = `${inject("redisKeyPrefix")}${tag}${randomBytes(2).toString("hex")}:`;
  if (prefix.length > 32)
    throw new Error(`prefix ${prefix} is longer than REDIS_KEY_PREFIX allows`);
  return prefix;
}

export { waitFor };

/** A port the OS says is free now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  server.close();
  await once(server, "close");
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

export interface GatewayProcess {
  readonly url: string;
  readonly id: string;
  readonly child: ChildProcess;
  /** Everything it wrote to stderr (its log lines), for assertions and failure messages. */
  stderr(): string;
  stop(): Promise<void>;
}

export interface GatewayOptions {
  readonly prefix: string;
  /** @default the run's Redis */
  readonly redisUrl?: string;
  readonly id?: string;
  /** Extra command-line arguments (`--expected-gateways 3`, ...). */
  readonly args?: readonly string[];
  /** Extra environment (`REDIS_CLUSTER_NODES`, ...). */
  readonly env?: Readonly<Record<string, string>>;
}

/** Starts one demo gateway on a free port and waits until it listens. */
export async function startGateway(options: GatewayOptions): Promise<GatewayProcess> {
  const id = options.id ?? `gw-${randomBytes(3).toString("hex")}`;
  const child = spawn(
    process.execPath,
    [
      "--conditions=react-server",
      "--import",
      "tsx",
      "scripts/gateway.ts",
      "--port",
      "0",
      "--id",
      id,
      ...(options.args ?? []),
    ],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        REDIS_URL: options.redisUrl ?? inject("redisUrl"),
        REDIS_KEY_PREFIX: options.prefix,
        ...options.env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const url = await waitFor(
    `gateway ${id} to listen`,
    () => {
      if (child.exitCode !== null) {
        throw new Error(`gateway ${id} exited with ${child.exitCode}: ${stderr}`);
      }
      return /listening on (http:\/\/\S+)/.exec(stdout)?.[1];
    },
    { timeoutMs: 60_000, intervalMs: 50 },
  );
  return {
    url,
    id,
    child,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, "exit");
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Starts `count` gateways in parallel. */
export function startGateways(count: number, options: GatewayOptions): Promise<GatewayProcess[]> {
  return Promise.all(
    Array.from({ length: count }, (_, index) =>
      startGateway({ ...options, id: `${options.id ?? "gw"}-${index + 1}` }),
    ),
  );
}

/** A gateway's `/healthz` body (the enforcer's status). */
export interface GatewayHealth {
  readonly isReady: boolean;
  readonly policy: { readonly version: number } | null;
  readonly snapshotErrors: {
    readonly count: number;
    readonly lastMessage: string | null;
    readonly lastVersion: number | null;
  };
  readonly breaker: { readonly state: string };
}

export async function health(gateway: GatewayProcess): Promise<GatewayHealth> {
  const response = await fetch(`${gateway.url}/healthz`);
  return (await response.json()) as GatewayHealth;
}

/** Waits until every gateway reports `version` in force. */
export async function waitForVersion(
  gateways: readonly GatewayProcess[],
  version: number,
  timeoutMs = 15_000,
): Promise<void> {
  await waitFor(
    `every gateway to apply version ${version}`,
    async () => {
      const reports = await Promise.all(gateways.map(health));
      return reports.every((report) => report.policy?.version === version) ? true : undefined;
    },
    { timeoutMs },
  );
}

/** One sample of a counter from a Prometheus text exposition, or 0 if absent. */
export function promSample(text: string, name: string, labels: Record<string, string>): number {
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`)) continue;
    const isMatch = Object.entries(labels).every(([label, value]) =>
      line.includes(`${label}="${value}"`),
    );
    if (isMatch) return Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return 0;
}

export interface PrivateRedis {
  readonly port: number;
  readonly url: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** SIGSTOP: the server keeps its connections but answers nothing (a hung Redis). */
  pause(): void;
  /** SIGCONT. */
  resume(): void;
}

/**
 * A `redis-server` of the test's own on a free port, which the test may stop and start again (the
 * shared one on 6379 is never touched). No persistence: a restart comes back empty.
 */
export async function privateRedis(port?: number): Promise<PrivateRedis> {
  port ??= await freePort();
  const url = `redis://127.0.0.1:${port}/0`;
  let child: ChildProcess | undefined;
  const redis = {
    port,
    url,
    async start() {
      child = spawn(
        "redis-server",
        ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        { stdio: "ignore" },
      );
      await waitFor(`redis-server on ${port}`, async () => {
        const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0 });
        client.on("error", () => {});
        try {
          await client.connect();
          return (await client.ping()) === "PONG" ? true : undefined;
        } finally {
          client.disconnect();
        }
      });
    },
    pause() {
      child?.kill("SIGSTOP");
    },
    resume() {
      child?.kill("SIGCONT");
    },
    async stop() {
      if (child === undefined || child.exitCode !== null) return;
      const exited = once(child, "exit");
      child.kill("SIGKILL");
      await exited;
      child = undefined;
    },
  };
  await redis.start();
  return redis;
}

/** A gateway's answer: status, single-valued headers, body text. */
export interface Reply {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/**
 * One request to `gateway` over `agent`'s connections (a kept-alive agent lets many leave at once
 * without connecting first).
 */
export function sendRequest(
  agent: Agent,
  gateway: GatewayProcess,
  path: string,
  headers: Record<string, string> = {},
  method = "GET",
): Promise<Reply> {
  const url = new URL(path, gateway.url);
  return new Promise((resolve, reject) => {
    const req = request(
      { agent, host: url.hostname, port: url.port, path: url.pathname, method, headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          const flat: Record<string, string> = {};
          for (const [name, value] of Object.entries(res.headers)) {
            if (typeof value === "string") flat[name] = value;
          }
          resolve({
            status: res.statusCode ?? 0,
            headers: flat,
            body: Buffer.concat(chunks).toString(),
          });
        });
      },
    );
    req.on("error", reject);
    req.end();
  });
}
