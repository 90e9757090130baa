/**
 * A private redis-server for tests that stop and restart Redis: the shared one on 6379 is never
 * touched. It listens on a free port, keeps nothing on disk, and can be stopped and started again
 * on the same port.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";
import { Redis } from "ioredis";
import { waitFor } from "./wait-for";

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  server.close();
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

async function answersPing(url: string): Promise<boolean> {
  const probe = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    connectTimeout: 500,
    retryStrategy: () => null,
  });
  probe.on("error", () => {});
  try {
    await probe.connect();
    return (await probe.ping()) === "PONG";
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

export interface OwnRedisServer {
  readonly url: string;
  /** Starts it (again, on the same port) and waits until it answers. */
  start(): Promise<void>;
  /** Stops it and waits for the process to exit. */
  stop(): Promise<void>;
}

export async function createOwnRedisServer(): Promise<OwnRedisServer> {
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}/0`;
  let child: ChildProcess | null = null;
  return {
    url,
    async start() {
      const started = spawn(
        "redis-server",
        [
          "--port",
          String(port),
          "--bind",
          "127.0.0.1",
          "--save",
          "",
          "--appendonly",
          "no",
          "--daemonize",
          "no",
        ],
        { stdio: "ignore" },
      );
      child = started;
      await waitFor(() => answersPing(url), {
        timeoutMs: 10_000,
        what: `redis-server on port ${port}`,
      });
    },
    async stop() {
      const running = child;
      child = null;
      if (running === null || running.exitCode !== null) return;
      const exited = once(running, "exit");
      running.kill("SIGKILL");
      await exited;
    },
  };
}
