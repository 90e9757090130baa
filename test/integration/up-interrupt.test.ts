/**
 * Ctrl-C while `npm run up` waits for its private redis-server to answer leaves nothing running:
 * the server is tracked from its spawn, so the stop reaches it (it used to be tracked only once it
 * answered, and was left running with an empty processes.json). A stand-in `redis-server` first on
 * PATH never answers and writes its pid; `up` runs with a state folder of its own and a
 * DATABASE_URL (so no embedded Postgres starts and nothing before Redis touches the database).
 */
import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { waitFor } from "./helpers/wait-for";

const ROOT = path.resolve(import.meta.dirname, "../..");
const scratch = mkdtempSync(path.join(tmpdir(), "lp-up-interrupt-"));
const pidFile = path.join(scratch, "redis.pid");

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

afterAll(() => {
  if (existsSync(pidFile)) {
    const pid = Number(readFileSync(pidFile, "utf8"));
    if (pid > 0 && isAlive(pid)) process.kill(pid, "SIGKILL");
  }
  rmSync(scratch, { recursive: true, force: true });
});

describe("npm run up stopped while its private Redis starts", () => {
  it("stops the redis-server it spawned and leaves processes.json empty", async () => {
    const fake = path.join(scratch, "redis-server");
    writeFileSync(fake, `#!/bin/sh\necho $$ > "${pidFile}"\nexec sleep 600\n`);
    chmodSync(fake, 0o755);
    const stateDir = path.join(scratch, "state");
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PATH: `${scratch}:${process.env.PATH ?? ""}`,
      LIMITPLANE_STATE_DIR: stateDir,
      DATABASE_URL: "postgresql://postgres@127.0.0.1:5432/lp_up_interrupt_unused",
    };
    delete env.REDIS_URL;
    const up = spawn(
      process.execPath,
      ["--conditions=react-server", "--import", "tsx", "scripts/up.ts"],
      { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] },
    );
    let output = "";
    up.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    up.stderr.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => up.once("exit", resolve));

    await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() !== "", {
      timeoutMs: 60_000,
      what: "the stand-in redis-server to start",
    });
    const redisPid = Number(readFileSync(pidFile, "utf8"));
    expect(isAlive(redisPid)).toBe(true);
    up.kill("SIGINT");
    await exited;

    expect(isAlive(redisPid), output).toBe(false);
    const recorded = path.join(stateDir, "processes.json");
    const left = existsSync(recorded) ? JSON.parse(readFileSync(recorded, "utf8")) : [];
    expect(left).toEqual([]);
  }, 120_000);
});
