/**
 * What `npm run up` has running, in `<state dir>/processes.json`: each process group it started
 * (pid = pgid), with a word of its command line to recognise it by. Written as they start,
 * emptied on a clean stop. A start that finds entries still alive (an `up` and its watchdog both
 * killed with SIGKILL, a machine that slept through it) stops them before anything binds a port,
 * and says so; one it may not stop is named with the exact command to run.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, realpathSync, renameSync, writeFileSync } from "node:fs";

export interface RecordedProcess {
  readonly pid: number;
  readonly name: string;
  /** A word its command line contains (`scripts/console.ts`, `redis-server`). */
  readonly marker: string;
}

function readRecord(file: string): RecordedProcess[] {
  if (!existsSync(file)) return [];
  try {
    const parsed: unknown = JSON.parse(readFileSync(file, "utf8"));
    return Array.isArray(parsed)
      ? parsed.filter(
          (entry): entry is RecordedProcess =>
            typeof entry === "object" &&
            entry !== null &&
            Number.isInteger((entry as RecordedProcess).pid) &&
            typeof (entry as RecordedProcess).marker === "string",
        )
      : [];
  } catch {
    return [];
  }
}

export class ProcessRecord {
  readonly #file: string;
  #entries: RecordedProcess[] = [];

  constructor(file: string) {
    this.#file = file;
  }

  add(entry: RecordedProcess): void {
    this.#entries.push(entry);
    this.#write(`${JSON.stringify(this.#entries, null, 2)}\n`);
  }

  clear(): void {
    this.#entries = [];
    this.#write("[]\n");
  }

  /**
   * Whole or not at all: written beside it and renamed over it, so a stop (or a crash) mid-write
   * never leaves a truncated file, which the next start would read as empty and so lose track of
   * what is still running.
   */
  #write(text: string): void {
    const partial = `${this.#file}.partial`;
    writeFileSync(partial, text, { mode: 0o600 });
    renameSync(partial, this.#file);
  }
}

/** The command line of `pid`, or null when no such process runs. */
function commandLineOf(pid: number): string | null {
  try {
    return execFileSync("ps", ["-o", "args=", "-p", String(pid)], { encoding: "utf8" }).trim();
  } catch {
    return null;
  }
}

/** Whether `pid` runs in `root` (Linux tells; elsewhere the command line has to do). */
function runsIn(pid: number, root: string): boolean {
  try {
    return realpathSync(`/proc/${pid}/cwd`) === realpathSync(root);
  } catch {
    return !existsSync("/proc/self");
  }
}

/** Running, not merely a zombie waiting to be reaped. */
export function isAlive(pid: number): boolean {
  try {
    const state = execFileSync("ps", ["-o", "stat=", "-p", String(pid)], { encoding: "utf8" });
    return !state.trim().startsWith("Z");
  } catch {
    return false;
  }
}

export interface Leftovers {
  readonly stopped: readonly RecordedProcess[];
  /** Still running after SIGKILL, or not ours to stop: the caller prints how. */
  readonly remaining: readonly RecordedProcess[];
}

/** Stops the recorded processes of an earlier run that still run here. */
export async function stopLeftovers(file: string, root: string): Promise<Leftovers> {
  const found = readRecord(file).filter((entry) => {
    const command = commandLineOf(entry.pid);
    return command?.includes(entry.marker) === true && runsIn(entry.pid, root);
  });
  for (const entry of found) {
    try {
      process.kill(-entry.pid, "SIGTERM");
    } catch {
      try {
        process.kill(entry.pid, "SIGTERM");
      } catch {
        // Gone meanwhile, or not ours: checked below.
      }
    }
  }
  const deadline = Date.now() + 5_000;
  while (found.some((entry) => isAlive(entry.pid)) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  for (const entry of found.filter((e) => isAlive(e.pid))) {
    try {
      process.kill(-entry.pid, "SIGKILL");
    } catch {
      // Reported below.
    }
  }
  const killDeadline = Date.now() + 2_000;
  while (found.some((entry) => isAlive(entry.pid)) && Date.now() < killDeadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    stopped: found.filter((entry) => !isAlive(entry.pid)),
    remaining: found.filter((entry) => isAlive(entry.pid)),
  };
}
