/**
 * A console of a spec's own: scripts/console.ts (what `npm start` runs) on a port of the spec's
 * choosing, with the run's environment plus `env`, in a process group of its own. For what the
 * shared servers of playwright.config.ts cannot show: another CONSOLE_TRUST_PROXY, or a database
 * that does not answer (a closed port; the shared Postgres is never stopped).
 */
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { runEnvironment } from "../run-env";

const ROOT = path.resolve(import.meta.dirname, "../..");

export interface OwnConsole {
  /** Its http:// address (a TLS console is reached at https:// on the same port). */
  readonly url: string;
  /** What it printed, for failure messages. */
  output(): string;
  stop(): Promise<void>;
}

export async function startOwnConsole(
  port: number,
  env: Record<string, string>,
  timeoutMs = 60_000,
): Promise<OwnConsole> {
  const child: ChildProcess = spawn(
    process.execPath,
    ["--conditions=react-server", "--import", "tsx", "scripts/console.ts"],
    {
      cwd: ROOT,
      env: { ...runEnvironment(), PORT: String(port), ...env },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    },
  );
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const deadline = Date.now() + timeoutMs;
  while (!output.includes("console: listening on")) {
    if (child.exitCode !== null) throw new Error(`the console exited: ${output}`);
    if (Date.now() > deadline) throw new Error(`the console did not start: ${output}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    url: `http://127.0.0.1:${port}`,
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.pid !== undefined) process.kill(-child.pid, "SIGTERM");
      await exited;
    },
  };
}
