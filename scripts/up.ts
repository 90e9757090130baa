/**
 * `npm run up`: from a fresh clone to a working product, on a machine with only Node and npm.
 *
 * - Postgres: DATABASE_URL when set (the database is created if missing); otherwise an embedded
 *   Postgres (PGlite) whose data lives in .limitplane/pgdata. It serves one connection, so the
 *   console runs with a pool of one and hosts the worker's jobs itself.
 * - Redis: REDIS_URL when set; otherwise a private redis-server on a free port when one is
 *   installed; otherwise it stops with a one-line hint.
 * - Then: migrations, the Prisma client, the example policy (only into an empty database), the
 *   first admin (credentials printed) and a local API token, a build of the console when missing
 *   or older than the sources; then the console, the worker, two demo gateways and the traffic
 *   generator, and where to look.
 *
 * Ctrl-C stops everything it started.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import { EnvError, loadEnv } from "../lib/server/env";
import { deploy } from "./db/migrate";
import { type EmbeddedPostgres, startEmbeddedPostgres } from "./lib/embedded-postgres";
import { freePort } from "./lib/free-port";
import { findRedisServer, type PrivateRedis, startPrivateRedis } from "./lib/private-redis";

const ROOT = path.resolve(import.meta.dirname, "..");
const STATE_DIR = path.resolve(ROOT, process.env.LIMITPLANE_STATE_DIR ?? ".limitplane");
const TSX = path.join(ROOT, "node_modules/.bin/tsx");
/** Every tsx child resolves `server-only` to its empty module, as Next's server does. */
const SERVER_CONDITION = "--conditions=react-server";
const NEXT = path.join(ROOT, "node_modules/.bin/next");

const children: ChildProcess[] = [];
let embeddedPostgres: EmbeddedPostgres | null = null;
let privateRedis: PrivateRedis | null = null;

function step(message: string): void {
  console.log(`\u25b8 ${message}`);
}

/** Runs a command to completion, inheriting the terminal. */
function run(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, env, stdio: "inherit" });
    child.on("exit", (code) =>
      code === 0
        ? resolve()
        : reject(new Error(`${path.basename(command)} ${args.join(" ")} exited with ${code}`)),
    );
    child.on("error", reject);
  });
}

/** Each long-running child leads its own process group, so stopping it stops its children too. */
function startService(
  name: string,
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): ChildProcess {
  const child = spawn(command, args, { cwd: ROOT, env, stdio: "inherit", detached: true });
  children.push(child);
  child.on("exit", (code, signal) => {
    if (!shuttingDown) {
      console.log(`${name} exited (${code ?? signal}); stopping everything`);
      void shutdown(code ?? 1);
    }
  });
  return child;
}

let shuttingDown = false;

async function shutdown(exitCode: number): Promise<never> {
  shuttingDown = true;
  const exits = children
    .filter((child) => child.exitCode === null && child.pid !== undefined)
    .map((child) => {
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      try {
        process.kill(-(child.pid ?? 0), "SIGTERM");
      } catch {
        // Already gone.
      }
      return Promise.race([exited, new Promise<void>((resolve) => setTimeout(resolve, 10_000))]);
    });
  await Promise.all(exits);
  // The database and Redis go last: the console may still be finishing a write.
  await privateRedis?.stop().catch(() => {});
  await embeddedPostgres?.stop().catch(() => {});
  process.exit(exitCode);
}

/** A session secret kept across restarts (so sign-ins survive), created on first run. */
function sessionSecret(): string {
  if (process.env.SESSION_SECRET) return process.env.SESSION_SECRET;
  const file = path.join(STATE_DIR, "session-secret");
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  mkdirSync(STATE_DIR, { recursive: true });
  const secret = randomBytes(32).toString("base64url");
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  return secret;
}

async function newestMtimeMs(dir: string): Promise<number> {
  let newest = 0;
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  for (const entry of entries) {
    if (!entry.isFile() || entry.parentPath.includes("node_modules")) continue;
    newest = Math.max(newest, (await stat(path.join(entry.parentPath, entry.name))).mtimeMs);
  }
  return newest;
}

async function isBuildStale(): Promise<boolean> {
  const marker = path.join(ROOT, ".next/BUILD_ID");
  if (!existsSync(marker)) return true;
  const builtAt = statSync(marker).mtimeMs;
  for (const dir of ["app", "components", "lib"]) {
    if ((await newestMtimeMs(path.join(ROOT, dir))) > builtAt) return true;
  }
  return false;
}

/**
 * Whether the generated client is missing or older than the schema. Generating rewrites files
 * under lib/, which would make a fresh build look stale (and rebuild `.next` under a running
 * server), so it runs only when needed.
 */
function isPrismaClientStale(): boolean {
  const client = path.join(ROOT, "lib/generated/prisma/client.ts");
  if (!existsSync(client)) return true;
  return statSync(path.join(ROOT, "prisma/schema.prisma")).mtimeMs > statSync(client).mtimeMs;
}

/** Lets the next process connect: the embedded database serves one connection at a time. */
async function databaseFree(): Promise<void> {
  await embeddedPostgres?.whenIdle();
}

async function main(): Promise<void> {
  const useEmbeddedPostgres = !process.env.DATABASE_URL;
  const usePrivateRedis = !process.env.REDIS_URL;

  let redisBinary: string | null = null;
  if (usePrivateRedis) {
    redisBinary = findRedisServer();
    if (redisBinary === null) {
      throw new Error(
        "Redis is needed: set REDIS_URL to a Redis 7, or install redis-server (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis) and run again.",
      );
    }
  }

  if (useEmbeddedPostgres) {
    step(
      "Starting an embedded Postgres (PGlite; data in .limitplane/pgdata; set DATABASE_URL to use yours)",
    );
    embeddedPostgres = await startEmbeddedPostgres({
      dataDir: path.join(STATE_DIR, "pgdata"),
      port: await freePort(),
    });
    process.env.DATABASE_URL = embeddedPostgres.url;
    process.env.DATABASE_POOL_SIZE = "1";
    process.env.LIMITPLANE_WORKER = "in-process";
  }
  if (redisBinary !== null) {
    step("Starting a private redis-server (set REDIS_URL to use yours)");
    privateRedis = await startPrivateRedis({ binary: redisBinary, port: await freePort() });
    process.env.REDIS_URL = privateRedis.url;
  }

  const env = loadEnv();
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    SESSION_SECRET: sessionSecret(),
    NEXT_TELEMETRY_DISABLED: "1",
  };

  const database = new URL(env.DATABASE_URL);
  step(`Migrating ${database.pathname.slice(1)} on ${database.host}`);
  const applied = await deploy(env.DATABASE_URL);
  console.log(applied.length ? `  applied ${applied.join(", ")}` : "  up to date");
  await databaseFree();

  if (isPrismaClientStale()) {
    step("Generating the Prisma client");
    await run("npx", ["prisma", "generate"], {
      ...childEnv,
      PRISMA_SCHEMA_ENGINE_BINARY: path.join(ROOT, "package.json"),
    });
  }

  step("Seeding the example policy (only into a database without one)");
  await run(TSX, [SERVER_CONDITION, "scripts/seed.ts"], childEnv);
  await databaseFree();

  step("Creating the first admin and a local API token (only when missing)");
  mkdirSync(STATE_DIR, { recursive: true });
  await run(
    TSX,
    [
      SERVER_CONDITION,
      "scripts/admin-create.ts",
      ...["--email", "admin@limitplane.local", "--name", "Limitplane admin"],
      ...["--if-none", "--save", path.join(STATE_DIR, "admin-credentials")],
    ],
    childEnv,
  );
  await databaseFree();
  await run(
    TSX,
    [
      SERVER_CONDITION,
      "scripts/token-create.ts",
      ...["--name", "local-cli", "--role", "operator"],
      ...["--into", path.join(STATE_DIR, "api-token")],
    ],
    childEnv,
  );
  await databaseFree();

  if (await isBuildStale()) {
    step("Building the console (first run or sources changed)");
    await run(NEXT, ["build"], childEnv);
  }

  if (env.LIMITPLANE_WORKER === "separate") {
    step("Starting the worker");
    startService("worker", TSX, [SERVER_CONDITION, "scripts/worker.ts"], childEnv);
  }

  step(`Starting the console on port ${env.PORT}`);
  startService("console", NEXT, ["start", "-p", String(env.PORT)], childEnv);

  const gatewayPorts = [await freePort(), await freePort()];
  step(`Starting two demo gateways on ports ${gatewayPorts.join(" and ")}`);
  for (const port of gatewayPorts) {
    startService(
      `gateway on ${port}`,
      TSX,
      [SERVER_CONDITION, "scripts/gateway.ts", "--port", String(port), "--expected-gateways", "2"],
      childEnv,
    );
  }
  const gatewayUrls = gatewayPorts.map((port) => `http://127.0.0.1:${port}`);
  await Promise.all(gatewayUrls.map((url) => untilAnswering(`${url}/healthz`, 60_000)));

  step("Starting the traffic generator (customers on every tier, steady and bursty)");
  startService(
    "traffic",
    TSX,
    [
      SERVER_CONDITION,
      "scripts/traffic.ts",
      "--gateways",
      gatewayUrls.join(","),
      "--duration",
      "forever",
    ],
    childEnv,
  );

  const credentials = readCredentials(path.join(STATE_DIR, "admin-credentials"));
  console.log(
    [
      "",
      `  Console:   http://127.0.0.1:${env.PORT}/   (status: http://127.0.0.1:${env.PORT}/status)`,
      credentials === null
        ? `  Sign in:   an admin existed already; ${path.relative(ROOT, path.join(STATE_DIR, "admin-credentials"))} has the one made on the first run`
        : `  Sign in:   ${credentials.email} / ${credentials.password}   (also in ${path.relative(ROOT, path.join(STATE_DIR, "admin-credentials"))})`,
      `  Gateways:  ${gatewayUrls.join("  ")}   (try: curl -i -H "Authorization: Bearer initech" ${gatewayUrls[0]}/v1/things)`,
      `  Metrics:   ${gatewayUrls.map((url) => `${url}/metrics`).join("  ")}`,
      `  API token: ${path.relative(ROOT, path.join(STATE_DIR, "api-token"))} (role operator; see the README's curl example)`,
      `  Postgres:  ${useEmbeddedPostgres ? `embedded (PGlite), data in ${path.relative(ROOT, path.join(STATE_DIR, "pgdata"))}` : database.host}`,
      `  Redis:     ${usePrivateRedis ? `private redis-server on ${env.REDIS_URL}` : new URL(env.REDIS_URL).host}`,
      "  Traffic is flowing; Ctrl-C stops everything started here.",
      "",
    ].join("\n"),
  );
}

/** The email and password `admin:create --save` wrote, when it did. */
function readCredentials(file: string): { email: string; password: string } | null {
  if (!existsSync(file)) return null;
  const text = readFileSync(file, "utf8");
  const email = /^email: (.+)$/m.exec(text)?.[1];
  const password = /^password: (.+)$/m.exec(text)?.[1];
  return email && password ? { email, password } : null;
}

async function untilAnswering(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline)
      throw new Error(`${url} did not come up within ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (!shuttingDown) void shutdown(0);
  });
}

main().catch((error: unknown) => {
  console.error(
    error instanceof EnvError
      ? error.message
      : `up: ${error instanceof Error ? error.message : String(error)}`,
  );
  void shutdown(1);
});
