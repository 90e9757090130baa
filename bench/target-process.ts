/**
 * The bench's side of a target process (`http-target.ts`, `backtest-target.ts`): starts the
 * script under tsx, resolves with the URL once it prints `listening on <url>`, and stops it with
 * SIGTERM. The start waits on the child's output and exit, not on a timer.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import path from "node:path";

const ROOT = path.resolve(import.meta.dirname, "..");
const START_TIMEOUT_MS = 60_000;

export interface TargetProcess {
  readonly url: URL;
  readonly child: ChildProcess;
}

/**
 * Runs `bench/<script>` (a path relative to the repository when it starts with `scripts/`) with
 * `args` and `env` added to this process's environment (`nodeArgs` to Node's own, after tsx);
 * `label` names it in errors.
 */
export function startTargetProcess(
  script: string,
  args: readonly string[],
  label: string,
  env: Readonly<Record<string, string>> = {},
  nodeArgs: readonly string[] = [],
): Promise<TargetProcess> {
  const file = script.startsWith("scripts/") ? script : `bench/${script}`;
  const child = spawn(
    process.execPath,
    ["--conditions=react-server", "--import", "tsx", ...nodeArgs, file, ...args],
    { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, ...env } },
  );
  return new Promise((resolve, reject) => {
    let stdout = "";
    const fail = (error: Error) => {
      clearTimeout(timer);
      child.kill("SIGTERM");
      reject(error);
    };
    const timer = setTimeout(
      () => fail(new Error(`${label} target did not start within ${START_TIMEOUT_MS} ms`)),
      START_TIMEOUT_MS,
    );
    const onExit = (code: number | null) => fail(new Error(`${label} target exited (${code})`));
    child.once("exit", onExit);
    child.stdout?.on("data", function onData(chunk: Buffer) {
      stdout += chunk.toString();
      const url = /listening on (\S+)/.exec(stdout)?.[1];
      if (url === undefined) return;
      clearTimeout(timer);
      child.off("exit", onExit);
      child.stdout?.off("data", onData);
      child.stdout?.resume();
      resolve({ url: new URL(url), child });
    });
  });
}

/** SIGTERM, and waits for the exit. */
export async function stopTargetProcess(target: TargetProcess): Promise<void> {
  if (target.child.exitCode !== null) return;
  const exited = once(target.child, "exit");
  target.child.kill("SIGTERM");
  await exited;
}
