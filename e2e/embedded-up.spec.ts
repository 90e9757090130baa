/**
 * The README's first command on a machine with only Node and npm: `npm run up` with no
 * DATABASE_URL (an embedded Postgres) and no REDIS_URL (a private redis-server), its state in a
 * temporary folder. It is stopped as `docker stop`, systemd or an IDE would stop it: a signal to
 * the npm process. Nothing it started may outlive it, whatever kills it:
 *
 * - SIGTERM to npm stops everything, with the traffic summary;
 * - SIGKILL to up.ts (which hosts the embedded Postgres): its watchdog stops the rest;
 * - SIGKILL to both up.ts and its watchdog: the next start finds what they left and stops it.
 *
 * The admin's password is printed when it is made, never again; the console listens on
 * 127.0.0.1 only.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect, test } from "@playwright/test";
import { isAlive } from "../scripts/lib/process-record";
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

/** Every process below `pid`, with its command line. */
function descendantsOf(pid: number): { pid: number; args: string }[] {
  const rows = execFileSync("ps", ["-eo", "pid=,ppid=,args="], { encoding: "utf8" })
    .split("\n")
    .map((line) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(line))
    .filter((match) => match !== null)
    .map((match) => ({ pid: Number(match[1]), ppid: Number(match[2]), args: match[3] ?? "" }));
  const found: { pid: number; args: string }[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const parent = queue.shift();
    for (const row of rows.filter((r) => r.ppid === parent)) {
      found.push({ pid: row.pid, args: row.args });
      queue.push(row.pid);
    }
  }
  return found;
}

interface Up {
  readonly npm: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

/** `npm run up`, as a user types it, until it says traffic is flowing. */
async function startUp(stateDir: string): Promise<Up> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(UP_PORT),
    LIMITPLANE_STATE_DIR: stateDir,
    NEXT_TELEMETRY_DISABLED: "1",
  };
  for (const name of [
    "DATABASE_URL",
    "DATABASE_OWNER_URL",
    "DATABASE_ROLE",
    "REDIS_URL",
    "REDIS_KEY_PREFIX",
    "SESSION_SECRET",
    "CONSOLE_TRUST_PROXY",
  ]) {
    delete env[name];
  }
  const npm = spawn("npm", ["run", "up"], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  npm.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  npm.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => npm.once("exit", (code) => resolve(code)));
  await expect
    .poll(() => output, { timeout: 200_000, message: "up to report that traffic is flowing" })
    .toMatch(/Traffic is flowing|\nup: /);
  expect(output).toContain("Traffic is flowing");
  return { npm, output: () => output, exited };
}

/** up.ts (npm runs it in place of its shell) and everything it started. */
function processesOf(up: Up) {
  const all = descendantsOf(up.npm.pid ?? 0);
  const upScript = all.find((entry) => entry.args.includes("scripts/up.ts"));
  const watchdog = all.find((entry) => entry.args.includes("scripts/lib/watchdog.ts"));
  expect(upScript, JSON.stringify(all)).toBeDefined();
  expect(watchdog, JSON.stringify(all)).toBeDefined();
  for (const part of [
    "scripts/console.ts",
    "scripts/gateway.ts",
    "scripts/traffic.ts",
    "redis-server",
  ]) {
    expect(
      all.some((entry) => entry.args.includes(part)),
      `${part} in ${JSON.stringify(all)}`,
    ).toBe(true);
  }
  return { all, up: upScript?.pid ?? 0, watchdog: watchdog?.pid ?? 0 };
}

async function expectAllGone(pids: readonly number[], what: string): Promise<void> {
  await expect.poll(() => pids.filter(isAlive), { timeout: 20_000, message: what }).toEqual([]);
  expect(await isListening(UP_PORT)).toBe(false);
}

test.describe("npm run up without DATABASE_URL and REDIS_URL", () => {
  test.setTimeout(600_000);
  let stateDir = "";
  const started: Up[] = [];

  test.beforeAll(() => {
    stateDir = mkdtempSync(path.join(tmpdir(), "lp-up-"));
  });
  test.afterAll(() => {
    for (const up of started) {
      for (const { pid } of descendantsOf(up.npm.pid ?? 0)) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // Gone.
        }
      }
      if (up.npm.exitCode === null) up.npm.kill("SIGKILL");
    }
    if (stateDir !== "") rmSync(stateDir, { recursive: true, force: true });
  });

  test("brings up a working product, and SIGTERM to npm stops all of it", async ({
    page,
    request,
  }) => {
    const up = await startUp(stateDir);
    started.push(up);
    const output = up.output();
    expect(output).toContain("Starting an embedded Postgres");
    expect(output).toContain("Starting a private redis-server");
    expect(output).toContain('connect as "limitplane_app"');
    expect(output).toContain(`console: listening on http://127.0.0.1:${UP_PORT}`);
    expect(output).not.toContain("Network:");
    // What a person needs and nothing else: the install step and its summary, no engine warning
    // on Node 20.19 (package.json "overrides" stand in for the Node 22 package prisma dev wants),
    // no install-scripts hint (allowScripts records them), no route table.
    // The install runs when node_modules does not match the lockfile, and is skipped when it does.
    expect(output).toMatch(
      /▸ (Installing the dependencies \(npm install: [^)\n]+\)\n(.*\n)* {2}done in \d+ s|Dependencies match package-lock\.json: npm install skipped)\n/,
    );
    expect(output).not.toContain("EBADENGINE");
    expect(output).not.toContain("install-scripts");
    expect(output).not.toContain("Route (app)");
    expect(output).not.toMatch(/^[┌├└│]/m);
    const credentials = /Sign in: +(\S+) \/ (\S+)/.exec(output);
    const gateway = /Gateways: +(http:\/\/127\.0\.0\.1:\d+)/.exec(output);
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

    const { all } = processesOf(up);
    up.npm.kill("SIGTERM");
    await up.exited;
    await expectAllGone(
      all.map((entry) => entry.pid),
      "every process npm run up started to end",
    );
    expect(up.output()).toContain("rejections per scope:");
  });

  test("SIGKILL to up.ts: its watchdog stops the rest; the password is not printed again", async () => {
    const up = await startUp(stateDir);
    started.push(up);
    expect(up.output()).not.toMatch(/Sign in: +\S+ \/ \S+/);
    expect(up.output()).toContain("Sign in:   admin@limitplane.local (its password is in");
    const { all, up: upPid } = processesOf(up);
    process.kill(upPid, "SIGKILL");
    await expectAllGone(
      all.map((entry) => entry.pid),
      "the children of a killed up.ts to end",
    );
    await up.exited;
  });

  test("SIGKILL to up.ts and its watchdog: the next start stops what they left", async () => {
    const first = await startUp(stateDir);
    started.push(first);
    const { all, up: upPid, watchdog } = processesOf(first);
    process.kill(watchdog, "SIGKILL");
    process.kill(upPid, "SIGKILL");
    await first.exited;
    const orphans = all.filter(
      (entry) => entry.pid !== upPid && entry.pid !== watchdog && isAlive(entry.pid),
    );
    expect(orphans.length, "the children outlive a killed up.ts and watchdog").toBeGreaterThan(3);

    const second = await startUp(stateDir);
    started.push(second);
    expect(second.output()).toMatch(/stopped \d+ process\(es\) left running by an earlier run/);
    for (const orphan of orphans) expect(isAlive(orphan.pid), orphan.args).toBe(false);
    const { all: now } = processesOf(second);
    second.npm.kill("SIGTERM");
    await second.exited;
    await expectAllGone(
      now.map((entry) => entry.pid),
      "every process of the second start to end",
    );
  });
});
