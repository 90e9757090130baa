/**
 * After the console is up (Playwright starts web servers before global setup; the console's
 * command has migrated the run's database): seed the example policy, create one operator per
 * role, and start what the product runs beside the console: the worker and two demo gateways,
 * each in its own process group. Resolves once every gateway enforces a policy, and returns the
 * teardown that stops them.
 */
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { GATEWAY_PORTS, GATEWAY_URLS, runEnvironment } from "./run-env";

const ROOT = path.resolve(import.meta.dirname, "..");

function runToEnd(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ["--conditions=react-server", "--import", "tsx", ...args],
      {
        cwd: ROOT,
        env: runEnvironment(),
        stdio: ["ignore", "inherit", "inherit"],
      },
    );
    child.on("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`${args.join(" ")} exited with ${code}`)),
    );
  });
}

function startLongRunning(args: string[]): ChildProcess {
  return spawn(process.execPath, ["--conditions=react-server", "--import", "tsx", ...args], {
    cwd: ROOT,
    env: runEnvironment(),
    stdio: ["ignore", "ignore", "inherit"],
    detached: true,
  });
}

async function untilHealthy(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const response = await fetch(`${url}/healthz`);
      if (response.ok) return;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) throw new Error(`${url} did not enforce a policy in time`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

export default async function globalSetup(): Promise<() => Promise<void>> {
  await runToEnd(["scripts/seed.ts"]);
  await runToEnd(["e2e/support/create-accounts.ts"]);
  const children = [
    startLongRunning(["scripts/worker.ts"]),
    ...GATEWAY_PORTS.map((port) =>
      startLongRunning(["scripts/gateway.ts", "--port", String(port), "--expected-gateways", "2"]),
    ),
  ];
  await Promise.all(GATEWAY_URLS.map((url) => untilHealthy(url, 60_000)));
  return async () => {
    for (const child of children) {
      if (child.pid !== undefined && child.exitCode === null) {
        try {
          process.kill(-child.pid, "SIGTERM");
        } catch {
          // Already gone.
        }
      }
    }
  };
}
