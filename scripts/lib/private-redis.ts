/**
 * A private redis-server for machines where REDIS_URL is not set: started on a free port, keeping
 * nothing on disk (the worker publishes the latest policy again after a restart), stopped with
 * `up`. When no redis-server is installed there is no embedded fallback: `findRedisServer`
 * returns null and `up` prints how to get one.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import net from "node:net";

export function findRedisServer(): string | null {
  try {
    const found = execFileSync("sh", ["-c", "command -v redis-server"], {
      encoding: "utf8",
    }).trim();
    return found === "" ? null : found;
  } catch {
    return null;
  }
}

export interface PrivateRedis {
  readonly url: string;
  readonly process: ChildProcess;
  stop(): Promise<void>;
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: "127.0.0.1" });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

export async function startPrivateRedis(options: {
  binary: string;
  port: number;
  /**
   * Called as soon as the process exists, before it answers: the caller tracks it then, so a stop
   * while it starts (Ctrl-C) finds it and a later start can stop what was left.
   */
  onSpawn?: (child: ChildProcess) => void;
}): Promise<PrivateRedis> {
  const child = spawn(
    options.binary,
    ["--port", String(options.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    { stdio: "ignore", detached: true },
  );
  options.onSpawn?.(child);
  const deadline = Date.now() + 10_000;
  while (!(await canConnect(options.port))) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`);
    if (Date.now() > deadline) throw new Error("redis-server did not start within 10 s");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    url: `redis://127.0.0.1:${options.port}/0`,
    process: child,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    },
  };
}
