/**
 * The watchdog of `npm run up`: a small process of its own that outlives `up` by a moment, so
 * nothing `up` started survives it, however `up` ends (Ctrl-C, SIGTERM, a crash, SIGKILL).
 *
 * `up` starts it first, in a process group of its own, with a pipe on its standard input, and
 * writes one line per process group it starts (`<pgid>`). When the pipe closes (the kernel closes
 * it when `up` exits, whatever killed it), the watchdog sends SIGTERM to every group still
 * alive, SIGKILL after `GRACE_MS` to what remains, and exits. redis-server and `next build` cannot
 * watch their parent; this covers them like the rest. After a normal stop `up` has already
 * stopped everything, and the watchdog finds nothing to do.
 */
import { createInterface } from "node:readline";

const GRACE_MS = 3_000;
const groups = new Set<number>();

function isAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

function signalAll(signal: NodeJS.Signals): void {
  for (const pgid of groups) {
    try {
      process.kill(-pgid, signal);
    } catch {
      groups.delete(pgid);
    }
  }
}

async function stopEverything(): Promise<void> {
  signalAll("SIGTERM");
  const deadline = Date.now() + GRACE_MS;
  while ([...groups].some(isAlive) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  signalAll("SIGKILL");
  process.exit(0);
}

// Signals meant for the terminal's foreground group do not stop the watchdog: `up` decides.
process.on("SIGINT", () => {});
process.on("SIGHUP", () => {});

const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const pgid = Number(line.trim());
  if (Number.isInteger(pgid) && pgid > 1) groups.add(pgid);
});
lines.on("close", () => {
  void stopEverything();
});
