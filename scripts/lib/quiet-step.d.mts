import type { ChildProcess } from "node:child_process";

export function npmInstallLines(output: string): string[];
export function nextBuildLines(output: string): string[];
export function progressLine(doing: string, elapsedMs: number): string;

export interface QuietStepOptions {
  label: string;
  doing: string;
  keep: (output: string) => string[];
  /** @default 15000 */
  progressEveryMs?: number;
  /** @default console.log */
  write?: (line: string) => void;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  onSpawn?: (child: ChildProcess) => void;
  /** @default false */
  detached?: boolean;
}

export function runQuietly(
  command: string,
  args: readonly string[],
  options: QuietStepOptions,
): Promise<void>;
