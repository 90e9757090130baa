/**
 * Enforcer suite, against the local Redis:
 *
 * 1. Propagation: 10 enforcers (in this process, each with its own three Redis connections) follow
 *    the policy while 50 tier changes are committed one after another through the policy service
 *    (`updateTier`: Postgres transaction, audit, version, outbox, publish); for each change and
 *    enforcer, the time from the service call to that enforcer applying the new version. p50/p99
 *    over every (change, enforcer) pair, and over changes of the time until the last enforcer had
 *    it. The enforcers share this process's one event loop, so they apply one after another: with
 *    one enforcer per process, as deployed, the last one would not wait for the other nine.
 * 2. Decisions per second through the HTTP middleware: a node:http server in a child process,
 *    protected by the enforcer (RedisStore) or by rate-limiter-flexible's RateLimiterRedis (or by
 *    nothing, for the server's own ceiling), driven from this process by a keep-alive client with
 *    many requests in flight. Every target runs in the same run, alternating, on the same machine.
 *    Each enforcer target reports how many of its decisions were made without Redis (its
 *    `/metrics`): the aim is 0, since Redis is healthy throughout.
 * 3. The same on a busy machine: 4 processes spinning per core (normal priority) while the
 *    enforcer and rate-limiter-flexible serve, one round each, and again the decisions made
 *    without Redis (aim 0: a busy host must serve slower, never unlimited).
 *
 * Figures from a small, noisy machine (2 cores shared by Redis, the server and the load): read them
 * as ratios, not absolutes.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { Agent, request } from "node:http";
import { availableParallelism, loadavg } from "node:os";
import path from "node:path";
import { createEnforcer, type Enforcer, type EnforcerLogger } from "@limitplane/enforcer";
import { MemoryStore } from "@limitplane/enforcer/limiter";
import type { TSnapshot } from "@limitplane/enforcer/policy";
import { publishSnapshot } from "@limitplane/enforcer/publication";
import { exampleSnapshot, startSpinners, tokenBucket } from "@limitplane/enforcer/testing";
import { Redis } from "ioredis";
import { importPolicy } from "@/lib/control/policy/import-policy";
import { getTier } from "@/lib/control/tier/get-tier";
import { updateTier } from "@/lib/control/tier/update-tier";
import { createPrisma } from "@/lib/server/db";
import { loadEnv } from "@/lib/server/env";
import type { ControlDeps } from "../lib/control/deps";
import { systemClock } from "../lib/server/composition";
import { createDatabase, dropDatabase, withDatabase } from "../scripts/db/databases";
import { applyMigrations } from "../scripts/db/schema-engine";
import { examplePolicyForSeed } from "../scripts/seed";

const silentLogger: EnforcerLogger = { log() {} };

const ROOT = path.resolve(import.meta.dirname, "..");
const ENFORCERS = 10;
const CHANGES = 50;
/** Changes before the measured ones, so the first measured one is not also the first JIT pass. */
const WARMUP_CHANGES = 5;
const IN_FLIGHT = 64;
const WARMUP_MS = 1_500;
const MEASURE_MS = 5_000;
const ROUNDS = 3;
const CUSTOMERS = 64;

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? Number.NaN;
}

function format(ms: number): string {
  return ms < 10 ? ms.toFixed(2) : ms.toFixed(1);
}

/** Publishes a snapshot with the control plane's own newer-only publish. */
async function publish(redis: Redis, prefix: string, snapshot: TSnapshot): Promise<void> {
  await publishSnapshot(redis, prefix, {
    version: snapshot.version,
    checksum: snapshot.checksum,
    snapshotJson: JSON.stringify(snapshot),
  });
}

/** Deletes every key under `prefix`. */
async function deleteKeys(redis: Redis, prefix: string): Promise<void> {
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
    cursor = next;
    if (keys.length > 0) await redis.unlink(...keys);
  } while (cursor !== "0");
}

/**
 * Commit to applied: a scratch database (`lp_bench_<random>`, dropped at the end) with the example
 * policy, 10 enforcers following its publications, and 50 tier changes made with `updateTier`,
 * whose transaction commits the change, its audit entry, the new version and its outbox row, and
 * then publishes it (the service's best-effort publish right after commit). The clock starts when
 * the service is called, so each figure includes the transaction, the compile and the publish.
 */
async function propagation(redis: Redis, redisUrl: string): Promise<void> {
  const prefix = `bench:pr${randomBytes(3).toString("hex")}:`;
  const databaseUrl = withDatabase(
    loadEnv().DATABASE_URL,
    `lp_bench_${randomBytes(4).toString("hex")}`,
  );
  await createDatabase(databaseUrl);
  await applyMigrations(databaseUrl);
  const db = createPrisma({ databaseUrl, poolSize: 2 });
  const deps: ControlDeps = {
    db,
    publisher: { db, redis, prefix, clock: systemClock },
    clock: systemClock,
  };
  const context = { actor: { type: "system" as const, id: null, name: "bench" }, reason: "bench" };
  try {
    await importPolicy(examplePolicyForSeed(Date.now()), context, deps);
    const enforcers: Enforcer[] = await Promise.all(
      Array.from({ length: ENFORCERS }, (_, index) =>
        createEnforcer({
          expectedGateways: ENFORCERS,
          redisUrl,
          keyPrefix: prefix,
          enforcerId: `bench-${index}`,
          store: () => new MemoryStore(),
          logger: silentLogger,
        }),
      ),
    );
    /** Per version: when each enforcer applied it, and who is waiting for all of them. */
    const appliedAt = new Map<number, number[]>();
    const waiters = new Map<number, () => void>();
    for (const enforcer of enforcers) {
      enforcer.onPolicyApplied((applied) => {
        const times = appliedAt.get(applied.version) ?? [];
        times.push(performance.now());
        appliedAt.set(applied.version, times);
        if (times.length === ENFORCERS) waiters.get(applied.version)?.();
      });
    }

    const perEnforcerMs: number[] = [];
    const allAppliedMs: number[] = [];
    const serviceMs: number[] = [];
    let unpublished = 0;
    for (let change = -WARMUP_CHANGES; change < CHANGES; change++) {
      const free = await getTier("free", deps);
      const committedAt = performance.now();
      // A tier change: the free tier's burst moves each time, so every change is a new version.
      const receipt = await updateTier(
        {
          name: "free",
          expectedVersion: free.version,
          limit: tokenBucket(30 + change + WARMUP_CHANGES, 10),
        },
        context,
        deps,
      );
      const returnedAt = performance.now();
      const version = receipt.policyVersion;
      if (version === null) throw new Error("the change produced no version");
      if (!receipt.published) unpublished++;
      const times = appliedAt.get(version) ?? [];
      if (times.length < ENFORCERS) {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(
            () => reject(new Error(`version ${version} not applied`)),
            10_000,
          );
          waiters.set(version, () => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      if (change < 0) continue;
      serviceMs.push(returnedAt - committedAt);
      const applied = appliedAt.get(version) ?? [];
      for (const at of applied) perEnforcerMs.push(at - committedAt);
      allAppliedMs.push(Math.max(...applied) - committedAt);
    }
    await Promise.all(enforcers.map((enforcer) => enforcer.stop()));

    console.log(
      `propagation, updateTier call to applied (${ENFORCERS} enforcers in one process, ${CHANGES} changes after ${WARMUP_CHANGES} unmeasured; ${unpublished} left to the worker):`,
    );
    console.log(
      `  per enforcer     p50 ${format(percentile(perEnforcerMs, 50))} ms   p99 ${format(percentile(perEnforcerMs, 99))} ms   max ${format(percentile(perEnforcerMs, 100))} ms`,
    );
    console.log(
      `  every enforcer   p50 ${format(percentile(allAppliedMs, 50))} ms   p99 ${format(percentile(allAppliedMs, 99))} ms`,
    );
    console.log(
      `  the updateTier call alone (transaction, audit, compile, outbox, then publish): p50 ${format(percentile(serviceMs, 50))} ms   p99 ${format(percentile(serviceMs, 99))} ms`,
    );
  } finally {
    await db.$disconnect();
    await dropDatabase(databaseUrl);
    await deleteKeys(redis, prefix);
  }
}

interface Target {
  readonly mode: string;
  readonly url: URL;
  readonly child: ChildProcess;
}

async function startTarget(mode: string, prefix: string, redisUrl: string): Promise<Target> {
  const child = spawn(
    process.execPath,
    [
      "--conditions=react-server",
      "--import",
      "tsx",
      "bench/http-target.ts",
      "--mode",
      mode,
      "--prefix",
      prefix,
      "--redis-url",
      redisUrl,
    ],
    { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] },
  );
  let stdout = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  const deadline = performance.now() + 60_000;
  for (;;) {
    const url = /listening on (\S+)/.exec(stdout)?.[1];
    if (url !== undefined) return { mode, url: new URL(url), child };
    if (child.exitCode !== null) throw new Error(`${mode} target exited`);
    if (performance.now() > deadline) throw new Error(`${mode} target did not start`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function stopTarget(target: Target): Promise<void> {
  if (target.child.exitCode !== null) return;
  const exited = once(target.child, "exit");
  target.child.kill("SIGTERM");
  await exited;
}

/** Decisions an enforcer target made without Redis, by reason, and those it waited for. */
interface WithoutRedis {
  readonly byReason: Readonly<Record<string, number>>;
  readonly total: number;
  readonly slow: number;
}

const WITHOUT_REDIS_REASONS = ["store-error", "timeout", "circuit-open"];

/** The target's counters now (cumulative since it started); null for a non-enforcer target. */
async function withoutRedisOf(target: Target): Promise<WithoutRedis | null> {
  if (!target.mode.startsWith("limitplane")) return null;
  const text = await (await fetch(new URL("/metrics", target.url))).text();
  const sample = (name: string, label: string) => {
    const line = text.split("\n").find((row) => row.startsWith(name) && row.includes(label));
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1));
  };
  const byReason: Record<string, number> = {};
  for (const reason of WITHOUT_REDIS_REASONS) {
    byReason[reason] = sample("limitplane_decisions_without_store_total", `reason="${reason}"`);
  }
  return {
    byReason,
    total: Object.values(byReason).reduce((sum, count) => sum + count, 0),
    slow: sample("limitplane_store_slow_decisions_total", "enforcer="),
  };
}

/** What changed between two readings of the same target. */
function withoutRedisBetween(before: WithoutRedis, after: WithoutRedis): WithoutRedis {
  const byReason: Record<string, number> = {};
  for (const reason of WITHOUT_REDIS_REASONS) {
    byReason[reason] = (after.byReason[reason] ?? 0) - (before.byReason[reason] ?? 0);
  }
  return { byReason, total: after.total - before.total, slow: after.slow - before.slow };
}

/** Measures `target` after a warm-up, with its decisions made without Redis during the measure. */
async function measure(target: Target): Promise<LoadResult> {
  await load(target.url, WARMUP_MS);
  const before = await withoutRedisOf(target);
  const result = await load(target.url, MEASURE_MS);
  const after = await withoutRedisOf(target);
  return {
    ...result,
    withoutRedis: before === null || after === null ? null : withoutRedisBetween(before, after),
  };
}

interface LoadResult {
  /** Enforcer targets only. */
  readonly withoutRedis?: WithoutRedis | null;
  readonly requests: number;
  readonly perSec: number;
  readonly statuses: Map<number, number>;
  readonly errors: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

/** `IN_FLIGHT` keep-alive loops hitting `url` for `durationMs`. */
async function load(url: URL, durationMs: number): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: IN_FLIGHT });
  const statuses = new Map<number, number>();
  const latencies: number[] = [];
  let errors = 0;
  const startedAt = performance.now();
  const endAt = startedAt + durationMs;
  const once = (customer: number) =>
    new Promise<void>((resolve) => {
      const sentAt = performance.now();
      const req = request(
        {
          agent,
          host: url.hostname,
          port: url.port,
          path: "/v1/things",
          headers: { authorization: `Bearer bench-${customer}`, "x-tier": "enterprise" },
        },
        (res) => {
          res.resume();
          res.on("end", () => {
            latencies.push(performance.now() - sentAt);
            const status = res.statusCode ?? 0;
            statuses.set(status, (statuses.get(status) ?? 0) + 1);
            resolve();
          });
        },
      );
      req.on("error", () => {
        errors++;
        resolve();
      });
      req.end();
    });
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async (_, worker) => {
      let count = 0;
      while (performance.now() < endAt) {
        await once((worker + count++ * IN_FLIGHT) % CUSTOMERS);
      }
    }),
  );
  const elapsedMs = performance.now() - startedAt;
  agent.destroy();
  return {
    requests: latencies.length,
    perSec: (latencies.length / elapsedMs) * 1000,
    statuses,
    errors,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
  };
}

async function throughput(redis: Redis, redisUrl: string): Promise<void> {
  const prefix = `bench:ht${randomBytes(3).toString("hex")}:`;
  await publish(
    redis,
    prefix,
    exampleSnapshot(() => {}, { version: 1 }),
  );
  const modes = ["bare", "limitplane", "limitplane-no-local", "flexible"];
  const results = new Map<string, LoadResult[]>(modes.map((mode) => [mode, []]));
  const BUSY_MODES = ["limitplane", "flexible"];
  const busyResults = new Map<string, LoadResult>();
  let busyLoadAtStart = "";
  let busyLoadAtEnd = "";
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const mode of modes) {
        const target = await startTarget(mode, prefix, redisUrl);
        try {
          results.get(mode)?.push(await measure(target));
        } finally {
          await stopTarget(target);
        }
      }
    }
    // The busy machine: 4 spinners per core while each target serves one more round.
    const spinners = await startSpinners(availableParallelism() * 4);
    try {
      busyLoadAtStart = loadPerCore();
      for (const mode of BUSY_MODES) {
        const target = await startTarget(mode, prefix, redisUrl);
        try {
          busyResults.set(mode, await measure(target));
        } finally {
          await stopTarget(target);
        }
      }
      busyLoadAtEnd = loadPerCore();
    } finally {
      await spinners.stop();
    }
  } finally {
    await deleteKeys(redis, prefix);
  }

  console.log(
    `\ndecisions per second through the HTTP middleware (server in a child process, ${IN_FLIGHT} keep-alive requests in flight from this process, ${CUSTOMERS} enterprise customers, ${ROUNDS} alternating rounds of ${MEASURE_MS / 1000} s each; median round, best in brackets):`,
  );
  const medians = new Map<string, LoadResult>();
  for (const [mode, runs] of results) {
    const sorted = [...runs].sort((a, b) => a.perSec - b.perSec);
    const median = sorted[Math.floor(sorted.length / 2)];
    const best = sorted[sorted.length - 1];
    if (median === undefined || best === undefined) continue;
    medians.set(mode, median);
    const statuses = [...median.statuses].map(([status, count]) => `${status}:${count}`).join(" ");
    console.log(
      `  ${mode.padEnd(20)} ${Math.round(median.perSec).toString().padStart(7)} req/s (${Math.round(best.perSec)})   p50 ${format(median.p50Ms)} ms   p99 ${format(median.p99Ms)} ms   ${statuses}${median.errors > 0 ? ` errors:${median.errors}` : ""}`,
    );
  }
  const flexible = medians.get("flexible");
  if (flexible !== undefined) {
    for (const mode of ["limitplane", "limitplane-no-local"]) {
      const ours = medians.get(mode);
      if (ours === undefined) continue;
      console.log(
        `  ${mode} / rate-limiter-flexible: ${(ours.perSec / flexible.perSec).toFixed(2)}x throughput, p99 ${(ours.p99Ms / flexible.p99Ms).toFixed(2)}x`,
      );
    }
  }

  console.log(
    `\non a busy machine (${availableParallelism() * 4} processes spinning at normal priority; load average per core ${busyLoadAtStart} at start, ${busyLoadAtEnd} at end), one round each:`,
  );
  for (const [mode, result] of busyResults) {
    console.log(
      `  ${mode.padEnd(20)} ${Math.round(result.perSec).toString().padStart(7)} req/s   p50 ${format(result.p50Ms)} ms   p99 ${format(result.p99Ms)} ms${result.errors > 0 ? ` errors:${result.errors}` : ""}`,
    );
  }
  const busyOurs = busyResults.get("limitplane");
  const busyTheirs = busyResults.get("flexible");
  if (busyOurs !== undefined && busyTheirs !== undefined) {
    console.log(
      `  limitplane / rate-limiter-flexible: ${(busyOurs.perSec / busyTheirs.perSec).toFixed(2)}x throughput, p99 ${(busyOurs.p99Ms / busyTheirs.p99Ms).toFixed(2)}x`,
    );
  }

  console.log(
    "\ndecisions made without Redis during the HTTP runs (Redis healthy throughout; the issue's aim: 0):",
  );
  const rows: [string, LoadResult[]][] = [
    ...[...results].filter(([mode]) => mode.startsWith("limitplane")),
    ...[...busyResults]
      .filter(([mode]) => mode.startsWith("limitplane"))
      .map(([mode, result]): [string, LoadResult[]] => [`${mode}, busy machine`, [result]]),
  ];
  for (const [label, runs] of rows) {
    const decided = runs.reduce((sum, run) => sum + run.requests, 0);
    const counted = runs.flatMap((run) => (run.withoutRedis ? [run.withoutRedis] : []));
    const total = counted.reduce((sum, counts) => sum + counts.total, 0);
    const slow = counted.reduce((sum, counts) => sum + counts.slow, 0);
    const reasons = WITHOUT_REDIS_REASONS.map(
      (reason) =>
        `${reason} ${counted.reduce((sum, counts) => sum + (counts.byReason[reason] ?? 0), 0)}`,
    ).join(", ");
    console.log(
      `  ${label.padEnd(28)} ${String(total).padStart(6)} of ${decided} decisions (${reasons}; ${slow} slow answers waited for)   aim 0   ${total === 0 ? "PASS" : "SHORT"}`,
    );
  }
}

function loadPerCore(): string {
  return ((loadavg()[0] ?? 0) / availableParallelism()).toFixed(2);
}

export async function run(): Promise<void> {
  console.log(
    `load average per core at start: ${loadPerCore()} (${availableParallelism()} cores; above 1, other processes competed for the CPU)`,
  );
  const redisUrl = loadEnv().REDIS_URL;
  const redis = new Redis(redisUrl);
  try {
    await propagation(redis, redisUrl);
    await throughput(redis, redisUrl);
    console.log(`load average per core at end: ${loadPerCore()}`);
  } finally {
    redis.disconnect();
  }
}
