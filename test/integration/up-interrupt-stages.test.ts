/**
 * Ctrl-C at each stage of `npm run up` leaves nothing running and nothing half-written: after the
 * install (only the watchdog is up), after Redis (the stop lands while the migrations run, and
 * waits for them: a migration cut short is recorded as failed and blocks the next start), after
 * the migrations (while the example policy is seeded), and during the build. Each `up` runs one
 * after another in one state folder, so each also finds what the one before recorded.
 *
 * It runs in a copy of the tree (its own `.next`, state folder, database and ports), so it never
 * touches the build the e2e consoles serve. `next` in the copy's `node_modules/.bin` is a stand-in
 * that writes its pid and a file into `.next` and waits: a real build takes minutes of both cores,
 * and what is tested is that the stop reaches it and no `BUILD_ID` claims a build that is not
 * whole. Redis is a real private redis-server; Postgres a database of its own, dropped after.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort } from "@limitplane/enforcer/testing";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { databaseNameOf, dropDatabase, withDatabase } from "../../scripts/db/databases";
import { waitFor } from "./helpers/wait-for";

const ROOT = path.resolve(import.meta.dirname, "../..");
const scratch = mkdtempSync(path.join(tmpdir(), "lp-up-stages-"));
const tree = path.join(scratch, "tree");
const stateDir = path.join(scratch, "state");
const nextPidFile = path.join(scratch, "next.pid");
const runDatabase = inject("ownerDatabaseUrl");
const databaseUrl = withDatabase(
  runDatabase,
  `${databaseNameOf(runDatabase)}_up${randomBytes(3).toString("hex")}`,
);
/** Every pid any run recorded, to be sure none is left when the file ends. */
const seenPids = new Set<number>();

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The copy: sources and config copied (times kept), dependencies linked, `next` a stand-in. */
function copyTree(): void {
  mkdirSync(tree);
  const entries = [
    "app",
    "components",
    "lib",
    "scripts",
    "prisma",
    "package.json",
    "tsconfig.json",
    "next.config.ts",
    "prisma.config.ts",
    "proxy.ts",
    "instrumentation.ts",
  ].filter((entry) => existsSync(path.join(ROOT, entry)));
  execFileSync("cp", ["-a", ...entries.map((entry) => path.join(ROOT, entry)), tree]);
  // The workspace package resolves to its source (tsconfig paths): linked, not copied.
  symlinkSync(path.join(ROOT, "packages"), path.join(tree, "packages"));
  const modules = path.join(tree, "node_modules");
  const bin = path.join(modules, ".bin");
  mkdirSync(bin, { recursive: true });
  for (const entry of readdirSync(path.join(ROOT, "node_modules"))) {
    if (entry !== ".bin")
      symlinkSync(path.join(ROOT, "node_modules", entry), path.join(modules, entry));
  }
  for (const entry of readdirSync(path.join(ROOT, "node_modules/.bin"))) {
    if (entry !== "next")
      symlinkSync(path.join(ROOT, "node_modules/.bin", entry), path.join(bin, entry));
  }
  const next = path.join(bin, "next");
  writeFileSync(
    next,
    `#!/bin/sh\nmkdir -p .next && echo building > .next/half-written\necho $$ > "${nextPidFile}"\nexec sleep 600\n`,
  );
  chmodSync(next, 0o755);
}

function recorded(): { pid: number; name: string }[] {
  const file = path.join(stateDir, "processes.json");
  return existsSync(file)
    ? (JSON.parse(readFileSync(file, "utf8")) as { pid: number; name: string }[])
    : [];
}

interface Run {
  readonly child: ChildProcess;
  readonly output: () => string;
  readonly exited: Promise<number | null>;
}

async function startUp(): Promise<Run> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    LIMITPLANE_STATE_DIR: stateDir,
    // The owner and the application are one role: no shared role's password is changed.
    DATABASE_URL: databaseUrl,
    DATABASE_OWNER_URL: databaseUrl,
    PORT: String(await freePort()),
    NEXT_TELEMETRY_DISABLED: "1",
  };
  for (const name of [
    "REDIS_URL",
    "REDIS_SENTINELS",
    "REDIS_CLUSTER_NODES",
    "DATABASE_ROLE",
    "REGIONS",
  ]) {
    delete env[name];
  }
  const child = spawn(
    process.execPath,
    ["--conditions=react-server", "--import", "tsx", "scripts/up.ts"],
    { cwd: tree, env, stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  return { child, output: () => output, exited };
}

/** Ctrl-C once `isAt` holds; then every process any run recorded is gone and nothing is listed. */
async function interruptWhen(run: Run, what: string, isAt: () => boolean): Promise<void> {
  await waitFor(isAt, { timeoutMs: 90_000, what: `up to reach ${what}:\n${run.output()}` });
  for (const entry of recorded()) seenPids.add(entry.pid);
  expect(recorded().length, run.output()).toBeGreaterThan(0);
  run.child.kill("SIGINT");
  expect(await run.exited, run.output()).toBe(0);
  // The watchdog sees its parent go and ends by itself a moment later.
  await waitFor(() => [...seenPids].every((pid) => !isAlive(pid)), {
    timeoutMs: 15_000,
    what: `every recorded process to end after ${what}: ${[...seenPids].filter(isAlive).join(", ")}`,
  });
  expect(recorded()).toEqual([]);
  expect(existsSync(path.join(stateDir, "processes.json.partial"))).toBe(false);
}

async function unfinishedMigrations(): Promise<number | null> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const table = await client.query<{ t: string | null }>(
      "SELECT to_regclass('_prisma_migrations')::text AS t",
    );
    if (table.rows[0]?.t == null) return null;
    const rows = await client.query<{ n: string }>(
      "SELECT count(*)::text AS n FROM _prisma_migrations WHERE finished_at IS NULL",
    );
    return Number(rows.rows[0]?.n ?? 0);
  } finally {
    await client.end();
  }
}

beforeAll(() => {
  copyTree();
});

afterAll(async () => {
  for (const pid of seenPids) {
    if (isAlive(pid)) process.kill(pid, "SIGKILL");
  }
  if (existsSync(nextPidFile)) {
    const pid = Number(readFileSync(nextPidFile, "utf8"));
    if (pid > 0 && isAlive(pid)) process.kill(pid, "SIGKILL");
  }
  await dropDatabase(databaseUrl).catch(() => {});
  rmSync(scratch, { recursive: true, force: true });
});

describe("npm run up stopped at each stage of its start", () => {
  it("after the install: the watchdog and anything started are stopped", async () => {
    const run = await startUp();
    await interruptWhen(run, "the watchdog", () =>
      recorded().some((entry) => entry.name === "watchdog"),
    );
  }, 120_000);

  it("after Redis: the migrations finish before the stop, none is left half-applied", async () => {
    const run = await startUp();
    await interruptWhen(run, "the migrations", () => run.output().includes("Migrating "));
    expect(run.output()).toContain("stopping once the migrations finish");
    expect(await unfinishedMigrations()).toBe(0);
  }, 120_000);

  it("after the migrations: the seed and everything else are stopped", async () => {
    const run = await startUp();
    await interruptWhen(run, "the seed", () => run.output().includes("Seeding the example policy"));
    expect(run.output()).toContain("up to date");
    expect(await unfinishedMigrations()).toBe(0);
  }, 120_000);

  it("during the build: the build is stopped and no BUILD_ID claims a whole build", async () => {
    const run = await startUp();
    await interruptWhen(run, "the build", () => existsSync(nextPidFile));
    const buildPid = Number(readFileSync(nextPidFile, "utf8"));
    expect(isAlive(buildPid)).toBe(false);
    expect(existsSync(path.join(tree, ".next/half-written"))).toBe(true);
    expect(existsSync(path.join(tree, ".next/BUILD_ID"))).toBe(false);
  }, 180_000);
});
