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

/**
 * A redis-server of the test's own, on a free port, with no persistence: for tests that stop,
 * pause, restart or flush Redis, which must never happen to the shared server on 6379. Every
 * method waits for what it changed to be observable (the server ready, or the process gone).
 */
export class OwnRedisServer {
  readonly port: number;
  #process: ChildProcess | undefined;

  private constructor(port: number) {
    this.port = port;
  }

  static async start(): Promise<OwnRedisServer> {
    const server = new OwnRedisServer(await freePort());
    await server.restart();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}/0`;
  }

  /** Starts the server (again) on the same port and resolves once it accepts connections. */
  async restart(): Promise<void> {
    if (this.#process !== undefined) throw new Error("the server is already running");
    const child = spawn(
      "redis-server",
      ["--port", String(this.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    this.#process = child;
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
