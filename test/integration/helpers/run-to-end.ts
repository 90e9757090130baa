/** A command run to its end, for tests of what a person types: its exit code and all it printed. */
import { spawn } from "node:child_process";

export interface Finished {
  readonly code: number | null;
  /** Standard output and error, interleaved as they came. */
  readonly output: string;
}

export function runToEnd(
  command: string,
  args: readonly string[],
  options: { readonly cwd: string; readonly env: NodeJS.ProcessEnv },
): Promise<Finished> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    const collect = (chunk: Buffer) => {
      output += chunk.toString();
    };
    child.stdout.on("data", collect);
    child.stderr.on("data", collect);
    child.on("exit", (code) => resolve({ code, output }));
  });
}
