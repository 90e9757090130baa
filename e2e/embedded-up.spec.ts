/**
 * The README's first command on a machine with only Node and npm: no DATABASE_URL (an embedded
 * Postgres) and no REDIS_URL (a private redis-server). It runs `scripts/up.ts` itself (what
 * `npm run up` runs after `npm install`), with its state in a temporary folder, uses the product
 * it brings up, then stops it with Ctrl-C (SIGINT) and checks nothing it started is left running.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect, test } from "@playwright/test";
import { E2E_PORT } from "./run-env";

const ROOT = path.resolve(import.meta.dirname, "..");
const UP_PORT = E2E_PORT + 20;

function isListening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: "127.0.0.1" });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

test.describe("npm run up without DATABASE_URL and REDIS_URL", () => {
  test.setTimeout(240_000);
  let up: ChildProcess | null = null;
  let stateDir = "";

  test.afterAll(() => {
    if (up?.pid !== undefined && up.exitCode === null) up.kill("SIGKILL");
    if (stateDir !== "") rmSync(stateDir, { recursive: true, force: true });
  });

  test("brings up a working product and Ctrl-C stops all of it", async ({ page, request }) => {
    stateDir = mkdtempSync(path.join(tmpdir(), "lp-up-"));
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: String(UP_PORT),
      LIMITPLANE_STATE_DIR: stateDir,
      NEXT_TELEMETRY_DISABLED: "1",
    };
    delete env.DATABASE_URL;
    delete env.REDIS_URL;
    delete env.REDIS_KEY_PREFIX;
    delete env.SESSION_SECRET;
    up = spawn(
      process.execPath,
      ["--conditions=react-server", "--import", "tsx", "scripts/up.ts"],
      {
        cwd: ROOT,
        env,
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let output = "";
    up.stdout?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    up.stderr?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    await expect
      .poll(() => output, { timeout: 200_000, message: "up to report that traffic is flowing" })
      .toContain("Traffic is flowing");

    expect(output).toContain("Starting an embedded Postgres");
    expect(output).toContain("Starting a private redis-server");
    const credentials = /Sign in: +(\S+) \/ (\S+)/.exec(output);
    const gateway = /Gateways: +(http:\/\/127\.0\.0\.1:\d+)/.exec(output);
    const redisPort = Number(
      /private redis-server on redis:\/\/127\.0\.0\.1:(\d+)/.exec(output)?.[1],
    );
    expect(credentials, output).not.toBeNull();
    expect(gateway, output).not.toBeNull();

    // The console works on the embedded database, and the worker (in the console's process) has
    // published the seeded policy to the private Redis, which the gateways enforce.
    await page.goto(`http://127.0.0.1:${UP_PORT}/status`);
    await expect(page.getByTestId("postgres-state")).toHaveText(/Connected/);
    await expect(page.getByTestId("redis-state")).toHaveText(/Connected/);
    await page.screenshot({
      path: test.info().outputPath("up-embedded-status.png"),
      fullPage: true,
    });
    const signIn = await request.post(`http://127.0.0.1:${UP_PORT}/api/v1/auth/sign-in`, {
      data: { email: credentials?.[1], password: credentials?.[2] },
      headers: { origin: `http://127.0.0.1:${UP_PORT}` },
    });
    expect(signIn.status()).toBe(200);
    const limited = await request.get(`${gateway?.[1]}/v1/things`, {
      headers: { authorization: "Bearer initech", "x-tier": "free" },
    });
    expect(limited.headers()["ratelimit-policy"]).toContain('"tier:free"');

    const exited = new Promise<number | null>((resolve) =>
      up?.once("exit", (code) => resolve(code)),
    );
    up.kill("SIGINT");
    expect(await exited).toBe(0);
    await expect.poll(() => isListening(UP_PORT), { timeout: 20_000 }).toBe(false);
    await expect.poll(() => isListening(redisPort), { timeout: 20_000 }).toBe(false);
    await expect
      .poll(() => isListening(Number(new URL(gateway?.[1] ?? "http://x:1").port)), {
        timeout: 20_000,
      })
      .toBe(false);
  });
});
