/**
 * Production refuses the public development secrets: `npm start` (scripts/console.ts, production
 * unless NODE_ENV says otherwise) and a recording gateway under NODE_ENV=production each exit 1
 * before serving anything, with one line per variable and no stack trace.
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");

/** Runs a script as npm would, without the variables a test run sets; resolves its exit and output. */
function run(
  script: string,
  args: readonly string[],
  env: Record<string, string>,
): Promise<{ code: number | null; output: string }> {
  const inherited = { ...process.env };
  for (const name of ["NODE_ENV", "SESSION_SECRET", "TRAFFIC_RECORD_SECRET", "AUDIT_KEY"]) {
    delete inherited[name];
  }
  const child = spawn(
    process.execPath,
    ["--conditions=react-server", "--import", "tsx", script, ...args],
    { cwd: ROOT, env: { ...inherited, PORT: "1", ...env }, stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  return new Promise((resolve) => child.once("exit", (code) => resolve({ code, output })));
}

describe.concurrent("production refuses development secrets", () => {
  it("npm start without NODE_ENV is production: the development SESSION_SECRET is refused in one line", async () => {
    const { code, output } = await run("scripts/console.ts", [], {});
    expect(code).toBe(1);
    expect(output).toContain(
      "Invalid configuration: SESSION_SECRET must be set in production (the development default is public)\n",
    );
    expect(output).not.toMatch(/\n\s+at /);
  });

  it("a gateway with NODE_ENV=production --record refuses the development TRAFFIC_RECORD_SECRET", async () => {
    const { code, output } = await run("scripts/gateway.ts", ["--record", "--memory"], {
      NODE_ENV: "production",
      SESSION_SECRET: "a-production-session-secret-0123456789",
    });
    expect(code).toBe(1);
    expect(output.trim()).toBe(
      "Invalid configuration: TRAFFIC_RECORD_SECRET must be set in production to keep the traffic record (the development default is public, so the recorded address hashes could be reversed)",
    );
  });
});
