/**
 * A deliberately busy machine: child processes that spin on the CPU at normal priority (no
 * `nice`), as other work on a shared host does. Only the test's own children are ever stopped.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";

export interface Spinners {
  readonly count: number;
  stop(): Promise<void>;
}

/** Starts `count` spinning processes and resolves once each is running. */
export async function startSpinners(count: number): Promise<Spinners> {
  const children: ChildProcess[] = [];
  for (let i = 0; i < count; i++) {
    // Prints once it runs, then never yields the CPU until killed.
    const child = spawn(
      process.execPath,
      ["-e", "process.stdout.write('spinning\\n'); for (;;) {}"],
      {
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    children.push(child);
  }
  await Promise.all(children.map((child) => once(child.stdout ?? child, "data")));
  return {
    count,
    async stop() {
      await Promise.all(
        children.map(async (child) => {
          if (child.exitCode !== null || child.signalCode !== null) return;
          const exited = once(child, "exit");
          child.kill("SIGKILL");
          await exited;
        }),
      );
    },
  };
}
