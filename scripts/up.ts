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
 *   or older than the sources; then the console, the worker, two demo gateways (recording traffic
 *   for backtests, with a TRAFFIC_RECORD_SECRET kept in .limitplane/traffic-record-secret), the
 *   rate-limit service (Envoy RLS and forward-auth, docs/ratelimit-service.md) and the traffic
 *   generator, and where to look.
 *
 * Stopping: Ctrl-C, SIGTERM or SIGHUP (to `npm`, which passes it on, or to this process) stops the
 * traffic generator first (it prints its summary), then the gateways, the console and the worker,
 * then Redis and the embedded Postgres, and exits 0. Every child runs in a process group of its
 * own, registered with a watchdog (scripts/lib/watchdog.ts) that stops them all if this process
 * dies without stopping them (even by SIGKILL); this process also stops when `npm` above it dies.
 * A start that finds processes of an earlier run still running (processes.json) stops them first.
 *
 * `npm run up -- --regions`: a two-region demo (docs/regions.md): two private redis-servers, one
 * per region (REGIONS), a demo gateway started in each (REGION), traffic to both, and one console
 * and worker publishing to both. Needs redis-server installed; REDIS_URL and friends are refused.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import { type Env, EnvError, loadEnv } from "../lib/server/env";
import { type ApplicationRole, ApplicationRoleError, urlForRole } from "./db/app-role";
import { type DeployTarget, deploy, deployTargetFromEnv } from "./db/migrate";
import { type EmbeddedPostgres, startEmbeddedPostgres } from "./lib/embedded-postgres";
import { ensurePrismaClient } from "./lib/ensure-prisma-client";
import { freePort } from "./lib/free-port";
import { findRedisServer, type PrivateRedis, startPrivateRedis } from "./lib/private-redis";
import { ProcessRecord, stopLeftovers } from "./lib/process-record";
import { nextBuildLines, runQuietly } from "./lib/quiet-step.mjs";

const ROOT = path.resolve(import.meta.dirname, "..");
const STATE_DIR = path.resolve(ROOT, process.env.LIMITPLANE_STATE_DIR ?? ".limitplane");
/**
 * Node scripts run as `node --conditions=react-server --import tsx <script>`: one process each
 * (tsx's own launcher would add a second, which signals and the watchdog would have to reach
 * through), resolving `server-only` to its empty module as Next's server does.
 */
const NODE_SCRIPT = ["--conditions=react-server", "--import", "tsx"];
const NEXT = path.join(ROOT, "node_modules/.bin/next");
/** The application role `up` creates when it owns the database (docs/production.md, "The application role"). */
const APP_ROLE_NAME = "limitplane_app";

/** Shutdown order: the traffic generator first (its summary), then the services, then the data. */
type Stage = "traffic" | "service" | "task";
interface Child {
  readonly name: string;
  readonly process: ChildProcess;
  readonly stage: Stage;
}

const children: Child[] = [];
let embeddedPostgres: EmbeddedPostgres | null = null;
let privateRedis: PrivateRedis | null = null;
/** The second region's redis-server of the two-region demo (`--regions`). */
let secondRegionRedis: PrivateRedis | null = null;
/** The two-region demo's regions, in order; the first uses `privateRedis`. */
const DEMO_REGIONS = ["eu-west", "us-west"] as const;
const isRegionsDemo = process.argv.slice(2).includes("--regions");
/** The private redis-server from its spawn on, before `privateRedis` is set (it answers). */
let privateRedisProcess: ChildProcess | null = null;
let watchdog: ChildProcess | null = null;
/**
 * Work a stop must not cut in half: the migrations (a migration stopped midway is recorded as
 * failed, and the next start refuses to migrate until someone resolves it by hand). A stop that
 * arrives meanwhile waits for it, then stops everything.
 */
let uninterruptible: Promise<unknown> | null = null;
const record = new ProcessRecord(path.join(STATE_DIR, "processes.json"));

function step(message: string): void {
  console.log(`\u25b8 ${message}`);
}

/** Registers a process group with the watchdog and in processes.json. */
function track(name: string, child: ChildProcess, marker: string): void {
  if (child.pid === undefined) return;
  watchdog?.stdin?.write(`${child.pid}\n`);
  record.add({ pid: child.pid, name, marker });
}

/**
 * Thrown instead of starting anything once a stop has begun: the start-up's next step must not
 * spawn a process after the stop has already stopped its stage (it would be left running).
 */
class Stopping extends Error {
  constructor() {
    super("stopping");
  }
}

function assertNotStopping(): void {
  if (shuttingDown) throw new Stopping();
}

function spawnTracked(
  name: string,
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  stage: Stage,
): ChildProcess {
  assertNotStopping();
  const child = spawn(command, args, { cwd: ROOT, env, stdio: "inherit", detached: true });
  register(name, child, args.find((arg) => arg.includes("/")) ?? path.basename(command), stage);
  return child;
}

/** Tracks a child (watchdog, processes.json) and stops it with its stage. */
function register(name: string, child: ChildProcess, marker: string, stage: Stage): void {
  track(name, child, marker);
  children.push({ name, process: child, stage });
  child.once("exit", () => {
    const index = children.findIndex((entry) => entry.process === child);
    if (index !== -1) children.splice(index, 1);
  });
}

/** Runs a command to completion (in a group of its own, so a stop reaches it too). */
function run(name: string, command: string, args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawnTracked(name, command, args, env, "task");
    child.on("exit", (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`${name} exited with ${code ?? signal}`)),
    );
    child.on("error", reject);
  });
}

function runScript(name: string, args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  return run(name, process.execPath, [...NODE_SCRIPT, ...args], env);
}

/** A long-running child; if it exits by itself, everything stops. */
function startService(
  name: string,
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  stage: Stage = "service",
): ChildProcess {
  const child = spawnTracked(name, command, args, env, stage);
  child.on("exit", (code, signal) => {
    if (!shuttingDown) {
      console.log(`${name} exited (${code ?? signal}); stopping everything`);
      void shutdown(code ?? 1);
    }
  });
  return child;
}

let shuttingDown = false;

/** SIGTERM to each group of `stage`, then SIGKILL to what is left after `graceMs`. */
async function stopStage(stage: Stage, graceMs: number): Promise<void> {
  const running = children.filter(
    (child) => child.stage === stage && child.process.exitCode === null,
  );
  await Promise.all(
    running.map(async ({ process: child }) => {
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      try {
        process.kill(-(child.pid ?? 0), "SIGTERM");
      } catch {
        return;
      }
      const timer = new Promise<"late">((resolve) => setTimeout(() => resolve("late"), graceMs));
      if ((await Promise.race([exited, timer])) === "late") {
        try {
          process.kill(-(child.pid ?? 0), "SIGKILL");
        } catch {
          // Gone meanwhile.
        }
        await exited;
      }
    }),
  );
}

async function shutdown(exitCode: number): Promise<never> {
  shuttingDown = true;
  await stopStage("traffic", 10_000);
  await stopStage("task", 10_000);
  await stopStage("service", 10_000);
  // The database and Redis go last: the console may still be finishing a write.
  await secondRegionRedis?.stop().catch(() => {});
  await privateRedis?.stop().catch(() => {});
  if (privateRedis === null) await stopStartingRedis();
  await embeddedPostgres?.stop().catch(() => {});
  record.clear();
  process.exit(exitCode);
}

/** Stops a redis-server interrupted while starting (spawned, not answering yet). */
async function stopStartingRedis(): Promise<void> {
  const child = privateRedisProcess;
  if (child === null || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  await exited;
}

/** Starts the watchdog; it stops every tracked group when this process ends, however it ends. */
function startWatchdog(): void {
  watchdog = spawn(process.execPath, [...NODE_SCRIPT, "scripts/lib/watchdog.ts"], {
    cwd: ROOT,
    stdio: ["pipe", "ignore", "inherit"],
    detached: true,
  });
  // The pipe must not keep this process alive, nor a write to a dead watchdog kill it.
  watchdog.stdin?.on("error", () => {});
  watchdog.unref();
  if (watchdog.pid !== undefined) {
    record.add({ pid: watchdog.pid, name: "watchdog", marker: "scripts/lib/watchdog.ts" });
  }
}

/** Stops what an earlier run left running, or explains what to do and stops. */
async function clearLeftovers(): Promise<void> {
  const { stopped, remaining } = await stopLeftovers(path.join(STATE_DIR, "processes.json"), ROOT);
  if (stopped.length > 0) {
    console.log(
      `  stopped ${stopped.length} process(es) left running by an earlier run: ${stopped.map((entry) => `${entry.name} (pid ${entry.pid})`).join(", ")}`,
    );
  }
  if (remaining.length > 0) {
    throw new Error(
      `processes of an earlier run are still running and could not be stopped; run: kill -9 ${remaining.map((entry) => entry.pid).join(" ")}`,
    );
  }
}

/** Fails with what to do when something that is not ours already listens on `port`. */
async function assertPortFree(port: number, host: string): Promise<void> {
  const inUse = await new Promise<boolean>((resolve) => {
    const server = net.createServer();
    server.once("error", () => resolve(true));
    server.listen(port, host, () => server.close(() => resolve(false)));
  });
  if (inUse) {
    throw new Error(
      `port ${port} on ${host} is in use by another program (see: ss -ltnp 'sport = :${port}' or lsof -i :${port}); stop it, or set PORT to another port`,
    );
  }
}

/** The password of the application role `up` creates, kept across restarts. */
function applicationRolePassword(): string {
  const file = path.join(STATE_DIR, "database-app-password");
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  const password = randomBytes(18).toString("base64url");
  writeFileSync(file, `${password}\n`, { mode: 0o600 });
  return password;
}

/**
 * Where migrations run and what the console and the worker connect as:
 * - embedded PGlite: one login (postgres); the app switches to `limitplane_app` (SET ROLE);
 * - DATABASE_URL alone: it is the owner; `up` creates `limitplane_app` (password kept in the
 *   state folder) and the app connects as that;
 * - DATABASE_OWNER_URL and DATABASE_URL: as given.
 */
function databaseTarget(): { target: DeployTarget; appEnv: Record<string, string> } {
  const env = loadEnv();
  if (embeddedPostgres !== null) {
    return {
      target: {
        ownerUrl: env.DATABASE_URL,
        appRole: { name: APP_ROLE_NAME, password: null },
        betweenConnections: databaseFree,
      },
      appEnv: { DATABASE_ROLE: APP_ROLE_NAME },
    };
  }
  if (env.DATABASE_OWNER_URL === undefined && env.DATABASE_ROLE === undefined) {
    const role: ApplicationRole = { name: APP_ROLE_NAME, password: applicationRolePassword() };
    return {
      target: { ownerUrl: env.DATABASE_URL, appRole: role },
      appEnv: {
        DATABASE_OWNER_URL: env.DATABASE_URL,
        DATABASE_URL: urlForRole(env.DATABASE_URL, role),
      },
    };
  }
  return { target: deployTargetFromEnv(env), appEnv: {} };
}

/**
 * A secret from `envVar`, else one kept in `.limitplane/<file>` across restarts, made on first
 * run (32 random bytes; the file readable by its owner only).
 */
function keptSecret(
  envVar: "SESSION_SECRET" | "TRAFFIC_RECORD_SECRET" | "AUDIT_KEY",
  file: string,
): string {
  const fromEnv = process.env[envVar];
  if (fromEnv) return fromEnv;
  const location = path.join(STATE_DIR, file);
  if (existsSync(location)) return readFileSync(location, "utf8").trim();
  mkdirSync(STATE_DIR, { recursive: true });
  const secret = randomBytes(32).toString("base64url");
  writeFileSync(location, `${secret}\n`, { mode: 0o600 });
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

/** Lets the next process connect: the embedded database serves one connection at a time. */
async function databaseFree(): Promise<void> {
  await embeddedPostgres?.whenIdle();
}

/** The operator's Redis for the summary: where the client starts from, never a password. */
function describeRedis(env: Env): string {
  if (env.REDIS_SENTINEL_NAME !== undefined && env.REDIS_SENTINELS.length > 0) {
    const sentinels = env.REDIS_SENTINELS.map((node) => `${node.host}:${node.port}`).join(",");
    return `Sentinel master "${env.REDIS_SENTINEL_NAME}" via ${sentinels}`;
  }
  if (env.REDIS_CLUSTER_NODES.length > 0) {
    return `Cluster via ${env.REDIS_CLUSTER_NODES.map((node) => `${node.host}:${node.port}`).join(",")}`;
  }
  return new URL(env.REDIS_URL).host;
}

async function main(): Promise<void> {
  mkdirSync(STATE_DIR, { recursive: true });
  await clearLeftovers();
  record.clear();
  startWatchdog();
  const useEmbeddedPostgres = !process.env.DATABASE_URL;
  // REDIS_SENTINELS or REDIS_CLUSTER_NODES name a Redis of the operator's even without REDIS_URL.
  const usePrivateRedis =
    !process.env.REDIS_URL && !process.env.REDIS_SENTINELS && !process.env.REDIS_CLUSTER_NODES;

  if (isRegionsDemo && !usePrivateRedis) {
    throw new Error(
      "--regions starts a private redis-server per region: unset REDIS_URL, REDIS_SENTINELS and REDIS_CLUSTER_NODES (or list your regions in REGIONS and start the processes yourself, docs/regions.md)",
    );
  }
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
    assertNotStopping();
    privateRedis = await startPrivateRedis({
      binary: redisBinary,
      port: await freePort(),
      // Tracked before it answers: Ctrl-C meanwhile stops it too (see shutdown).
      onSpawn: (child) => {
        privateRedisProcess = child;
        track("redis-server", child, "redis-server");
      },
    });
    process.env.REDIS_URL = privateRedis.url;
    if (isRegionsDemo) {
      step(`Starting a second private redis-server, for region ${DEMO_REGIONS[1]}`);
      assertNotStopping();
      secondRegionRedis = await startPrivateRedis({
        binary: redisBinary,
        port: await freePort(),
        onSpawn: (child) => track("redis-server", child, "redis-server"),
      });
      process.env.REGIONS = JSON.stringify([
        { name: DEMO_REGIONS[0], url: privateRedis.url },
        { name: DEMO_REGIONS[1], url: secondRegionRedis.url },
      ]);
    }
  }

  const env = loadEnv();
  await assertPortFree(env.PORT, env.CONSOLE_HOST);
  const { target, appEnv } = databaseTarget();
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    ...appEnv,
    // Kept across restarts: sign-ins survive, and the traffic record's address hashes stay
    // comparable (the demo gateways record, so a tier preview shows a backtest).
    SESSION_SECRET: keptSecret("SESSION_SECRET", "session-secret"),
    TRAFFIC_RECORD_SECRET: keptSecret("TRAFFIC_RECORD_SECRET", "traffic-record-secret"),
    AUDIT_KEY: keptSecret("AUDIT_KEY", "audit-key"),
    NEXT_TELEMETRY_DISABLED: "1",
  };

  const database = new URL(env.DATABASE_URL);
  step(`Migrating ${database.pathname.slice(1)} on ${database.host}`);
  const deploying = deploy(target);
  uninterruptible = deploying;
  const { applied, role } = await deploying.finally(() => {
    uninterruptible = null;
  });
  console.log(applied.length ? `  applied ${applied.join(", ")}` : "  up to date");
  if (target.appRole !== null) {
    console.log(
      `  the console and the worker connect as "${target.appRole.name}" (${role}; it cannot alter the audit log)`,
    );
  }
  await databaseFree();

  if (await ensurePrismaClient({ log: (line) => step(line) })) await databaseFree();

  step("Seeding the example policy (only into a database without one)");
  await runScript("seed", ["scripts/seed.ts"], childEnv);
  await databaseFree();

  step("Creating the first admin and a local API token (only when missing)");
  const credentialsFile = path.join(STATE_DIR, "admin-credentials");
  const hadCredentials = existsSync(credentialsFile);
  await runScript(
    "admin:create",
    [
      "scripts/admin-create.ts",
      ...["--email", "admin@limitplane.local", "--name", "Limitplane admin"],
      ...["--if-none", "--save", credentialsFile],
    ],
    childEnv,
  );
  await databaseFree();
  await runScript(
    "token:create",
    [
      "scripts/token-create.ts",
      ...["--name", "local-cli", "--role", "operator"],
      ...["--into", path.join(STATE_DIR, "api-token")],
    ],
    childEnv,
  );
  await databaseFree();

  if (await isBuildStale()) {
    // Minutes on a first run: progress while it runs, then warnings and the time it took, not
    // the route table (the whole output when it fails).
    assertNotStopping();
    await runQuietly(NEXT, ["build"], {
      label: "Building the console (first run or sources changed; a few minutes)",
      doing: "building",
      keep: nextBuildLines,
      cwd: ROOT,
      env: childEnv,
      detached: true,
      onSpawn: (child) => register("next build", child, "next", "task"),
    });
  }

  if (env.LIMITPLANE_WORKER === "separate") {
    step("Starting the worker");
    startService("worker", process.execPath, [...NODE_SCRIPT, "scripts/worker.ts"], childEnv);
  }

  step(`Starting the console on ${env.CONSOLE_HOST}:${env.PORT}`);
  startService("console", process.execPath, [...NODE_SCRIPT, "scripts/console.ts"], childEnv);

  const gatewayPorts = [await freePort(), await freePort()];
  const policyCacheDir = path.join(STATE_DIR, "policy-cache");
  mkdirSync(policyCacheDir, { recursive: true });
  step(
    isRegionsDemo
      ? `Starting a demo gateway in each region: ${DEMO_REGIONS[0]} on ${gatewayPorts[0]}, ${DEMO_REGIONS[1]} on ${gatewayPorts[1]}`
      : `Starting two demo gateways on ports ${gatewayPorts.join(" and ")} (recording traffic for backtests)`,
  );
  for (const [index, port] of gatewayPorts.entries()) {
    startService(
      `gateway on ${port}`,
      process.execPath,
      [
        ...NODE_SCRIPT,
        "scripts/gateway.ts",
        "--port",
        String(port),
        "--expected-gateways",
        // One per region in the demo: each region's gateways share only that region's budget.
        isRegionsDemo ? "1" : "2",
        "--record",
        // The last good policy, enforced when a restart finds Redis without one (one file per
        // gateway slot, so each region's gateway keeps its own region's policy).
        "--policy-cache",
        path.join(policyCacheDir, `gateway-${index + 1}.lpcache`),
      ],
      isRegionsDemo ? { ...childEnv, REGION: DEMO_REGIONS[index] } : childEnv,
    );
  }
  const gatewayUrls = gatewayPorts.map((port) => `http://127.0.0.1:${port}`);
  await Promise.all(gatewayUrls.map((url) => untilAnswering(`${url}/healthz`, 60_000)));

  const [rlsGrpcPort, rlsHttpPort] = [await freePort(), await freePort()];
  const rlsSecret = randomBytes(24).toString("hex");
  step(`Starting the rate-limit service (gRPC ${rlsGrpcPort}, forward-auth ${rlsHttpPort})`);
  startService(
    "ratelimit-service",
    process.execPath,
    [...NODE_SCRIPT, "scripts/ratelimit-service.ts", "--expected-gateways", "1"],
    {
      ...childEnv,
      RATELIMIT_SERVICE_HOST: "127.0.0.1",
      RATELIMIT_SERVICE_GRPC_PORT: String(rlsGrpcPort),
      RATELIMIT_SERVICE_HTTP_PORT: String(rlsHttpPort),
      // Loopback only, for trying it out; docs/ratelimit-service.md sets up TLS.
      RATELIMIT_SERVICE_GRPC_PLAINTEXT: "true",
      RATELIMIT_SERVICE_POLICY_CACHE: path.join(policyCacheDir, "ratelimit-service.lpcache"),
      RATELIMIT_SERVICE_SECRET: rlsSecret,
    },
  );
  const rlsUrl = `http://127.0.0.1:${rlsHttpPort}`;
  await untilAnswering(`${rlsUrl}/healthz`, 60_000);

  step("Starting the traffic generator (customers on every tier, steady and bursty)");
  startService(
    "traffic",
    process.execPath,
    [
      ...NODE_SCRIPT,
      "scripts/traffic.ts",
      "--gateways",
      gatewayUrls.join(","),
      "--duration",
      "forever",
    ],
    childEnv,
    "traffic",
  );
  await untilAnswering(`http://127.0.0.1:${env.PORT}/api/health`, 60_000, [200, 503]);

  // The password is shown once, when it was just made; after that the file has it.
  const credentials = hadCredentials ? null : readCredentials(credentialsFile);
  const credentialsPath = path.relative(ROOT, credentialsFile);
  console.log(
    [
      "",
      `  Console:   http://127.0.0.1:${env.PORT}/   (status: http://127.0.0.1:${env.PORT}/status)`,
      credentials === null
        ? `  Sign in:   admin@limitplane.local (its password is in ${credentialsPath}, if this folder made it)`
        : `  Sign in:   ${credentials.email} / ${credentials.password}   (also in ${credentialsPath})`,
      `  Gateways:  ${gatewayUrls.join("  ")}   (try: curl -i -H "Authorization: Bearer initech" ${gatewayUrls[0]}/v1/things)`,
      `  Metrics:   ${gatewayUrls.map((url) => `${url}/metrics`).join("  ")}`,
      `  Rate-limit service: Envoy RLS at 127.0.0.1:${rlsGrpcPort} (plaintext), forward-auth ${rlsUrl}/check (try: curl -i -H "X-Limitplane-Secret: ${rlsSecret}" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /v1/things" -H "X-Customer-Id: initech" ${rlsUrl}/check)`,
      `  API token: ${path.relative(ROOT, path.join(STATE_DIR, "api-token"))} (role operator; a curl example is in docs/http-api.md)`,
      `  Postgres:  ${useEmbeddedPostgres ? `embedded (PGlite), data in ${path.relative(ROOT, path.join(STATE_DIR, "pgdata"))}` : database.host}`,
      isRegionsDemo
        ? `  Regions:   ${env.REGIONS.map((region) => `${region.name} (redis-server on ${new URL(region.redis.url).host})`).join(", ")}; the overview filters by region`
        : `  Redis:     ${usePrivateRedis ? `private redis-server on ${env.REDIS_URL}` : describeRedis(env)}`,
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

async function untilAnswering(
  url: string,
  timeoutMs: number,
  statuses: readonly number[] = [200],
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (statuses.includes((await fetch(url)).status)) return;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline)
      throw new Error(`${url} did not come up within ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(signal, () => {
    if (shuttingDown) return;
    shuttingDown = true;
    const pending = uninterruptible;
    if (pending === null) {
      void shutdown(0);
      return;
    }
    console.log("up: stopping once the migrations finish (a migration cut short is left failed)");
    void pending.then(
      () => shutdown(0),
      () => shutdown(0),
    );
  });
}

// `npm run up` runs this in place of its shell (`exec`), so npm is the parent: if npm dies
// without passing a signal on (SIGKILL), stop too.
const parentPid = process.ppid;
setInterval(() => {
  if (process.ppid !== parentPid && !shuttingDown) {
    console.log("up: the process that started this one is gone; stopping everything");
    void shutdown(1);
  }
}, 1_000).unref();

main().catch((error: unknown) => {
  // A stop is under way and will exit: the step it interrupted has nothing to add.
  if (error instanceof Stopping || shuttingDown) return;
  console.error(
    error instanceof EnvError || error instanceof ApplicationRoleError
      ? error.message
      : `up: ${error instanceof Error ? error.message : String(error)}`,
  );
  void shutdown(1);
});
