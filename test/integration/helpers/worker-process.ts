import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";

export interface WorkerProcess {
  readonly child: ChildProcess;
  /** Everything it printed so far, stdout and stderr. */
  output(): string;
}

/**
 * `npm run worker` as production runs it, without npm or the tsx wrapper in between (a signal must
 * reach the worker, not a relay), with `env` over this process's environment.
 */
export function spawnWorkerProcess(env: Readonly<Record<string, string>>): WorkerProcess {
  const root = path.resolve(import.meta.dirname, "../../..");
  const child = spawn(
    process.execPath,
    ["--conditions=react-server", "--import", "tsx", "scripts/worker.ts"],
    { cwd: root, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  return { child, output: () => output };
}
