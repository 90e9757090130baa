/**
 * `npm run up`: from a fresh clone to a running control plane.
 *
 * Checks the configuration, creates the database if it is missing, applies the migrations,
 * generates the Prisma client, builds the console when the build is missing or older than the
 * sources, and starts it. Ctrl-C stops everything this started.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import { EnvError, loadEnv } from "../lib/server/env";
import { deploy } from "./db/migrate";

const ROOT = path.resolve(import.meta.dirname, "..");
const STATE_DIR = path.join(ROOT, ".limitplane");
const children: ChildProcess[] = [];

function step(message: string): void {
  console.log(`\u25b8 ${message}`);
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, env, stdio: "inherit" });
    child.on("exit", (code) =>
      code === 0
        ? resolve()
        : reject(new Error(`${command} ${args.join(" ")} exited with ${code}`)),
    );
    child.on("error", reject);
  });
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

/** Each long-running child leads its own process group, so stopping it stops its children too. */
function startService(command: string, args: string[], env: NodeJS.ProcessEnv): ChildProcess {
  const child = spawn(command, args, { cwd: ROOT, env, stdio: "inherit", detached: true });
  children.push(child);
  return child;
}

function stopAll(): void {
  for (const child of children) {
    if (child.exitCode !== null || child.pid === undefined) continue;
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {
      // Already gone.
    }
  }
}

async function main(): Promise<void> {
  const env = loadEnv();
  const secret = sessionSecret();
  const childEnv = { ...process.env, SESSION_SECRET: secret, NEXT_TELEMETRY_DISABLED: "1" };

  step(
    `Migrating ${new URL(env.DATABASE_URL).pathname.slice(1)} on ${new URL(env.DATABASE_URL).host}`,
  );
  const applied = await deploy(env.DATABASE_URL);
  console.log(applied.length ? `  applied ${applied.join(", ")}` : "  up to date");

  step("Generating the Prisma client");
  await run("npx", ["prisma", "generate"], {
    ...childEnv,
    PRISMA_SCHEMA_ENGINE_BINARY: path.join(ROOT, "package.json"),
  });

  if (await isBuildStale()) {
    step("Building the console (first run or sources changed)");
    await run("npx", ["next", "build"], childEnv);
  }

  step(`Starting the console on port ${env.PORT}`);
  const server = startService(
    path.join(ROOT, "node_modules/.bin/next"),
    ["start", "-p", String(env.PORT)],
    childEnv,
  );
  server.on("exit", (code) => {
    console.log(`console exited (${code ?? "signal"})`);
    stopAll();
    process.exit(code ?? 0);
  });
  console.log(
    `\n  Limitplane is starting: http://127.0.0.1:${env.PORT}/status\n  Ctrl-C stops it.\n`,
  );
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    stopAll();
    process.exit(0);
  });
}

main().catch((error: unknown) => {
  stopAll();
  console.error(
    error instanceof EnvError
      ? error.message
      : `up: ${error instanceof Error ? error.message : String(error)}`,
  );
  process.exit(1);
});
