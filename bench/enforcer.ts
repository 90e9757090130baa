/**
 * Enforcer suite, against the local Redis:
 *
 * 1. Propagation: 10 enforcers (in this process, each with its own three Redis connections) follow
 *    the policy while 50 changes are committed one after another; for each change and enforcer,
 *    the time from the commit to that enforcer applying the new version. p50/p99 over every
 *    (change, enforcer) pair, and over changes of the time until the last enforcer had it.
 * 2. Decisions per second through the HTTP middleware: a node:http server in a child process,
 *    protected by the enforcer (RedisStore) or by rate-limiter-flexible's RateLimiterRedis (or by
 *    nothing, for the server's own ceiling), driven from this process by a keep-alive client with
 *    many requests in flight. Every target runs in the same run, alternating, on the same machine.
 *
 * Figures from a small, noisy machine (2 cores shared by Redis, the server and the load): read them
 * as ratios, not absolutes.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { Agent, request } from "node:http";
import path from "node:path";
import { Redis } from "ioredis";
import { createEnforcer, type Enforcer, silentLogger } from "@/lib/enforcer";
import { MemoryStore } from "@/lib/limiter";
import { exampleSnapshot, tokenBucket } from "@/lib/policy/fixtures/policy-factory";
import type { TSnapshot } from "@/lib/policy/schemas";
import { loadEnv } from "@/lib/server/env";

const ROOT = path.resolve(import.meta.dirname, "..");
const ENFORCERS = 10;
const CHANGES = 50;
/** Changes before the measured ones, so the first measured one is not also the first JIT pass. */
const WARMUP_CHANGES = 5;
const IN_FLIGHT = 64;
const WARMUP_MS = 1_500;
const MEASURE_MS = 5_000;
const ROUNDS = 2;
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

/** Publishes the way the control plane does: newer-only hash write and announcement. */
async function publish(redis: Redis, prefix: string, snapshot: TSnapshot): Promise<void> {
  await redis
    .multi()
    .hset(`${prefix}policy:current`, {
      version: String(snapshot.version),
      checksum: snapshot.checksum,
      snapshot: JSON.stringify(snapshot),
      publishedAt: String(Date.now()),
    })
    .publish(
      `${prefix}policy:announce`,
      JSON.stringify({ version: snapshot.version, checksum: snapshot.checksum }),
    )
    .exec();
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

async function propagation(redis: Redis, redisUrl: string): Promise<void> {
  const prefix = `bench:pr${randomBytes(3).toString("hex")}:`;
  await publish(
    redis,
    prefix,
    exampleSnapshot(() => {}, { version: 1 }),
  );
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
  for (let change = -WARMUP_CHANGES; change < CHANGES; change++) {
    const version = change + WARMUP_CHANGES + 2;
    // A tier change: the free tier's burst moves each time, so every version differs.
    const snapshot = exampleSnapshot(
      (input) => {
        const free = input.tiers.find((tier) => tier.name === "free");
        if (free !== undefined) free.limit = tokenBucket(30 + change, 10);
      },
      { version },
    );
    const everyApplied = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`version ${version} not applied`)), 10_000);
      waiters.set(version, () => {
        clearTimeout(timer);
        resolve();
      });
    });
    const committedAt = performance.now();
    await publish(redis, prefix, snapshot);
    await everyApplied;
    if (change < 0) continue;
    const times = appliedAt.get(version) ?? [];
    for (const at of times) perEnforcerMs.push(at - committedAt);
    allAppliedMs.push(Math.max(...times) - committedAt);
  }
  await Promise.all(enforcers.map((enforcer) => enforcer.stop()));
  await deleteKeys(redis, prefix);

  console.log(
    `propagation, commit to applied (${ENFORCERS} enforcers in one process, ${CHANGES} changes after ${WARMUP_CHANGES} unmeasured, published directly to Redis):`,
  );
  console.log(
    `  per enforcer     p50 ${format(percentile(perEnforcerMs, 50))} ms   p99 ${format(percentile(perEnforcerMs, 99))} ms   max ${format(percentile(perEnforcerMs, 100))} ms`,
  );
  console.log(
    `  every enforcer   p50 ${format(percentile(allAppliedMs, 50))} ms   p99 ${format(percentile(allAppliedMs, 99))} ms`,
  );
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

interface LoadResult {
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
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of modes) {
      const target = await startTarget(mode, prefix, redisUrl);
      try {
        await load(target.url, WARMUP_MS);
        results.get(mode)?.push(await load(target.url, MEASURE_MS));
      } finally {
        await stopTarget(target);
      }
    }
  }
  await deleteKeys(redis, prefix);

  console.log(
    `\ndecisions per second through the HTTP middleware (server in a child process, ${IN_FLIGHT} keep-alive requests in flight, ${CUSTOMERS} customers, ${ROUNDS} rounds of ${MEASURE_MS / 1000} s, best round):`,
  );
  const best = new Map<string, LoadResult>();
  for (const [mode, runs] of results) {
    const top = [...runs].sort((a, b) => b.perSec - a.perSec)[0];
    if (top === undefined) continue;
    best.set(mode, top);
    const statuses = [...top.statuses].map(([status, count]) => `${status}:${count}`).join(" ");
    console.log(
      `  ${mode.padEnd(20)} ${Math.round(top.perSec).toString().padStart(7)} req/s   p50 ${format(top.p50Ms)} ms   p99 ${format(top.p99Ms)} ms   (${statuses}${top.errors > 0 ? ` errors:${top.errors}` : ""}; rounds: ${runs.map((run) => Math.round(run.perSec)).join(", ")})`,
    );
  }
  const flexible = best.get("flexible");
  if (flexible !== undefined) {
    for (const mode of ["limitplane", "limitplane-no-local"]) {
      const ours = best.get(mode);
      if (ours === undefined) continue;
      console.log(
        `  ${mode} / rate-limiter-flexible: ${(ours.perSec / flexible.perSec).toFixed(2)}x throughput, p99 ${(ours.p99Ms / flexible.p99Ms).toFixed(2)}x`,
      );
    }
  }
}

export async function run(): Promise<void> {
  const redisUrl = loadEnv().REDIS_URL;
  const redis = new Redis(redisUrl);
  try {
    await propagation(redis, redisUrl);
    await throughput(redis, redisUrl);
  } finally {
    redis.disconnect();
  }
}
