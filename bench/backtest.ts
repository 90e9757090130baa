/**
 * Backtest suite (issue 17), two parts in one run:
 *
 * 1. The cost of recording: a gateway's HTTP throughput with the traffic record on against the
 *    same gateway with it off (two child processes, one Redis, 64 keep-alive requests in flight
 *    from this process), in PAIRS alternating pairs of short rounds (which goes first alternates),
 *    so a shared machine's swings move both alike; medians, their spread and the ratio, also the
 *    median of the paired ratios. Target: under 5 % lower.
 * 2. A backtest of one draft over a recorded day: a scratch database (`lp_bench_backtest_<hex>`,
 *    migrated, the example policy imported) gets a generated day of BENCH_BACKTEST_REQUESTS
 *    (default 10,000,000) requests from 10,000 customers in bursts, stored exactly as the worker
 *    stores the record (per gateway and 5 minutes, columnar, deflated), their recorded outcomes
 *    computed by the pure core under the policy in force. Then `runBacktest` of a pro-tier cut
 *    over the whole day is timed, loading from Postgres included. Target: under 10 s. Loading and
 *    replay are then timed again each on its own, for where the time goes. The same
 *    day sampled at 10 % of subjects is then backtested too, and its estimates are compared with
 *    the full record's (the mismatch rate under sampling). A summary with the load average ends the
 *    run. `BENCH_BACKTEST_SKIP_HTTP=1` skips part 1, `BENCH_BACKTEST_SKIP_DAY=1` part 2.
 */
import { randomBytes } from "node:crypto";
import { Agent, request } from "node:http";
import { availableParallelism, loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { deflateRawSync } from "node:zlib";
import {
  decideLayeredBinding,
  LayeredScratch,
  type LimitState,
} from "@limitplane/enforcer/limiter";
import { prepareSnapshot, type ResolvedCheck, resolveLimits } from "@limitplane/enforcer/policy";
import {
  encodeTrafficBatch,
  FLAG_ALLOWED,
  FLAG_STORE_TIME,
  isSampledSubject,
  NO_BINDING,
  type TrafficProfile,
  TrafficRecorder,
} from "@limitplane/enforcer/recording";
import {
  deleteKeysUnder,
  exampleSnapshot,
  publishTestSnapshot,
  tokenBucket,
} from "@limitplane/enforcer/testing";
import { applyBacktestDraft, ZBacktestDraft } from "@/lib/control/backtest/backtest-draft";
import { loadTrafficWindow } from "@/lib/control/backtest/load-traffic-window";
import { replayTraffic } from "@/lib/control/backtest/replay-traffic";
import { type BacktestResult, runBacktest } from "@/lib/control/backtest/run-backtest";
import { readCompiledSnapshot } from "@/lib/control/policy/get-current-snapshot";
import { importPolicy } from "@/lib/control/policy/import-policy";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { createPrisma } from "@/lib/server/db";
import { loadEnv } from "@/lib/server/env";
import { createRedis } from "@/lib/server/redis";
import { createDatabase, dropDatabase, withDatabase } from "../scripts/db/databases";
import { applyMigrations } from "../scripts/db/schema-engine";
import { examplePolicyForSeed } from "../scripts/seed";
import { benchRedis, loadLine, median, pairedRatios, summary } from "./fair";
import { recordTarget } from "./results";
import { startTargetProcess, stopTargetProcess, type TargetProcess } from "./target-process";

const REQUESTS = Number(process.env.BENCH_BACKTEST_REQUESTS ?? 10_000_000);
const CUSTOMERS = 10_000;
const BURST = 25;
const BURST_SPACING_MS = 2;
const CHUNK_MS = 300_000;
const DAY_MS = 86_400_000;
const TARGET_S = 10;
/** Alternating on/off pairs of short rounds: a shared machine's noise moves both alike. */
const PAIRS = 15;
const ROUND_MS = 1_000;
const IN_FLIGHT = 64;

function load(): string {
  return loadavg()
    .map((value) => value.toFixed(2))
    .join(" ");
}

/** A full collection before a timed part (the bench runs with --expose-gc), so none pays for the last. */
function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/** mulberry32: a seeded generator, so every run generates the same day. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---------------------------------------------------------------------------------------------
// 1. The cost of recording

type Target = TargetProcess;

function startTarget(prefix: string, redisUrl: string, record: "on" | "off"): Promise<Target> {
  const args = ["--prefix", prefix, "--record", record, "--redis-url", redisUrl];
  return startTargetProcess("backtest-target.ts", args, `recording ${record}`);
}

/** The target process's CPU time so far (user + system), in microseconds. */
async function targetCpuMicros(url: URL): Promise<number> {
  const reply = (await fetch(new URL("/cpu", url)).then((r) => r.json())) as { micros: number };
  return reply.micros;
}

/**
 * One round through `url` over `durationMs`, IN_FLIGHT at a time: requests per second, and the
 * target's CPU microseconds per request (what the gateway spent, whoever else had the cores).
 */
async function throughput(
  url: URL,
  durationMs: number,
): Promise<{ perSec: number; cpuMicrosPerRequest: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: IN_FLIGHT });
  let done = 0;
  const cpuBefore = await targetCpuMicros(url);
  const startedAt = performance.now();
  const endAt = startedAt + durationMs;
  const one = (customer: number) =>
    new Promise<void>((resolve) => {
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
            done++;
            resolve();
          });
        },
      );
      req.on("error", () => resolve());
      req.end();
    });
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async (_, worker) => {
      let count = 0;
      while (performance.now() < endAt) await one((worker + count++ * IN_FLIGHT) % 1000);
    }),
  );
  const seconds = (performance.now() - startedAt) / 1000;
  agent.destroy();
  const cpu = (await targetCpuMicros(url)) - cpuBefore;
  return { perSec: done / seconds, cpuMicrosPerRequest: cpu / Math.max(1, done) };
}

/** What `TrafficRecorder` costs per decision (median of 5 runs of 200,000): record and encode. */
function recorderCostNs(): number {
  const recorder = new TrafficRecorder({
    addressHashKey: "bench-traffic-record-key-0123456789",
    gatewayId: "bench",
    prefix: "bench:",
    redis: { xadd: async () => 1, sadd: async () => 1, pexpire: async () => 1 },
  });
  const checks = [{ scope: "tier:enterprise" }, { scope: "ceiling" }];
  const subjects = Array.from({ length: 1000 }, (_, n) => `c:bench-${n}`);
  const decision = { allowed: true, scope: "tier:enterprise", source: "store", degraded: false };
  const runs: number[] = [];
  for (let run = 0; run < 5; run++) {
    const startedAt = performance.now();
    for (let i = 0; i < 200_000; i++) {
      recorder.record({
        subject: subjects[i % 1000] ?? "",
        tier: "enterprise",
        endpointClass: "default",
        cost: 1,
        policyVersion: 1,
        checks,
        decision,
        wallTimeMs: 1.7e12 + i,
      });
      // A gateway at 10,000 req/s flushes every 10,000 decisions; the flush's encode is synchronous.
      if (i % 10_000 === 9_999) void recorder.flush();
    }
    runs.push(((performance.now() - startedAt) * 1e6) / 200_000);
  }
  return median(runs);
}

/** Runs the recording-cost rounds; returns the summary lines. */
async function recordingCost(): Promise<string[]> {
  // A Redis of the bench's own unless BENCH_REDIS_URL is set: other clients' traffic is noise.
  const benchRedisServer = await benchRedis();
  const redisUrl = benchRedisServer.url;
  const redis = createRedis("control", { url: redisUrl });
  const prefix = `bench:bt:${randomBytes(3).toString("hex")}:`;
  const snapshot = exampleSnapshot(() => {}, { version: 1 });
  await publishTestSnapshot(redis, prefix, snapshot);
  const targets = await Promise.all([
    startTarget(prefix, redisUrl, "off"),
    startTarget(prefix, redisUrl, "on"),
  ]);
  const [off, on] = targets;
  if (off === undefined || on === undefined) throw new Error("targets");
  try {
    await throughput(off.url, 1_000);
    await throughput(on.url, 1_000);
    const loadBefore = loadLine("before");
    const rounds = {
      off: { perSec: [] as number[], cpu: [] as number[] },
      on: { perSec: [] as number[], cpu: [] as number[] },
    };
    for (let pair = 0; pair < PAIRS; pair++) {
      // Alternate which goes first, so neither always follows the other.
      const order = pair % 2 === 0 ? (["off", "on"] as const) : (["on", "off"] as const);
      for (const mode of order) {
        const round = await throughput(mode === "on" ? on.url : off.url, ROUND_MS);
        rounds[mode].perSec.push(round.perSec);
        rounds[mode].cpu.push(round.cpuMicrosPerRequest);
      }
    }
    const written = await fetch(new URL("/recorded", on.url)).then((r) => r.json());
    // Throughput on / off per pair, and the same from CPU: requests per CPU-second on / off.
    const wallRatios = pairedRatios(rounds.on.perSec, rounds.off.perSec);
    const cpuRatios = pairedRatios(rounds.off.cpu, rounds.on.cpu);
    const wallRatio = median(rounds.on.perSec) / median(rounds.off.perSec);
    const cpuRatio = median(rounds.off.cpu) / median(rounds.on.cpu);
    const lower = (ratio: number) => `${((1 - ratio) * 100).toFixed(1)} % lower`;
    console.log(
      `\nthe cost of recording: one gateway's HTTP throughput, ${PAIRS} alternating pairs of ${ROUND_MS / 1000} s rounds, ${IN_FLIGHT} in flight; median [min-max]`,
    );
    console.log(`  ${loadBefore}`);
    console.log(
      `  req/s            off ${summary(rounds.off.perSec, 0)}   on ${summary(rounds.on.perSec, 0)}`,
    );
    console.log(
      `  CPU µs/request   off ${summary(rounds.off.cpu, 1)}   on ${summary(rounds.on.cpu, 1)}   (the gateway process's own CPU per request)`,
    );
    console.log(
      `  on / off, req/s: ${wallRatio.toFixed(3)} of the medians (${lower(wallRatio)}); paired ${summary(wallRatios, 3)}`,
    );
    console.log(
      `  on / off, requests per CPU-second: ${cpuRatio.toFixed(3)} of the medians (${lower(cpuRatio)}); paired ${summary(cpuRatios, 3)}`,
    );
    const { requests, bytes, batches } = written as {
      requests: number;
      bytes: number;
      batches: number;
    };
    if (requests > 0) {
      console.log(
        `  recorded ${requests.toLocaleString("en")} requests in ${batches} batches, ${(bytes / requests).toFixed(1)} bytes a request in the stream (${(((bytes / requests) * 1e6) / 1024 / 1024).toFixed(1)} MiB per million requests before deflate)`,
      );
    }
    const recorderNs = recorderCostNs();
    console.log(
      `  the recorder alone, in this process: ${recorderNs.toFixed(0)} ns per decision (record + its share of the flush's encode), ${((recorderNs / 1000 / median(rounds.off.cpu)) * 100).toFixed(2)} % of the gateway's CPU per request`,
    );
    const verdicts = [
      recordTarget({
        group: "recording cost",
        name: "recording on against off, HTTP throughput",
        measured: `${lower(wallRatio)} (req/s medians ${Math.round(median(rounds.on.perSec))} / ${Math.round(median(rounds.off.perSec))})`,
        aim: "under 5 % lower",
        isMet: wallRatio > 0.95,
      }),
      recordTarget({
        group: "recording cost",
        name: "recording on against off, throughput per CPU-second",
        measured: `${lower(cpuRatio)} (CPU µs/request medians ${median(rounds.on.cpu).toFixed(1)} / ${median(rounds.off.cpu).toFixed(1)})`,
        aim: "under 5 % lower",
        isMet: cpuRatio > 0.95,
      }),
    ];
    for (const verdict of verdicts) console.log(`  ${verdict}`);
    console.log(`  ${loadLine("after")}`);
    return verdicts;
  } finally {
    await Promise.all(targets.map(stopTargetProcess));
    if (!benchRedisServer.isOwn) await deleteKeysUnder(redis, prefix);
    redis.disconnect();
    await benchRedisServer.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// 2. A recorded day

interface GeneratedDay {
  readonly perCustomer: number;
  readonly timeMs: Float64Array;
  readonly profile: Uint8Array;
  readonly flags: Uint8Array;
  readonly binding: Uint8Array;
  readonly profiles: readonly TrafficProfile[];
}

const TIERS = ["free", "free", "free", "free", "free", "free", "free", "pro", "pro", "enterprise"];

function tierOf(customer: number): string {
  return TIERS[customer % TIERS.length] ?? "free";
}

/** Bursts of BURST requests at random times; outcomes decided by the core, customer by customer. */
function generateDay(
  snapshot: Awaited<ReturnType<typeof readCompiledSnapshot>>,
  dayStartMs: number,
): GeneratedDay {
  const perCustomer = Math.ceil(REQUESTS / CUSTOMERS / BURST) * BURST;
  const n = perCustomer * CUSTOMERS;
  const timeMs = new Float64Array(n);
  const profile = new Uint8Array(n);
  const flags = new Uint8Array(n);
  const binding = new Uint8Array(n);
  const prepared = prepareSnapshot(snapshot);
  const profiles: TrafficProfile[] = [];
  // Per profile: its checks, its cost, and per check the slot of its bucket (shared by profiles).
  const bucketSlots = new Map<string, number>();
  const profileIds = new Map<
    string,
    { id: number; checks: readonly ResolvedCheck[]; cost: number; slots: number[] }
  >();
  const profileFor = (tier: string, endpointClass: string) => {
    const key = `${tier}/${endpointClass}`;
    let entry = profileIds.get(key);
    if (entry === undefined) {
      const resolution = resolveLimits(
        prepared,
        { customerId: "bench-0", tier, endpointClass },
        dayStartMs,
        { trace: false },
      );
      const slots = resolution.checks.map((check) => {
        const bucket = check.bucket ?? check.scope;
        let slot = bucketSlots.get(bucket);
        if (slot === undefined) {
          slot = bucketSlots.size;
          bucketSlots.set(bucket, slot);
        }
        return slot;
      });
      entry = { id: profiles.length, checks: resolution.checks, cost: resolution.cost, slots };
      profiles.push({
        tier,
        endpointClass,
        cost: resolution.cost,
        policyVersion: snapshot.version,
        scopes: resolution.checks.map((check) => check.scope),
      });
      profileIds.set(key, entry);
    }
    return entry;
  };
  const random = seeded(17);
  const bursts = perCustomer / BURST;
  const starts = new Float64Array(bursts);
  const scratch = new LayeredScratch();
  const inputs: (LimitState | undefined)[][] = [];
  const outputs: (LimitState | undefined)[][] = [];
  for (let c = 0; c < CUSTOMERS; c++) {
    for (let b = 0; b < bursts; b++) starts[b] = random() * (DAY_MS - 1_000);
    starts.sort();
    const states: (LimitState | undefined)[] = [];
    const tier = tierOf(c);
    let i = c * perCustomer;
    for (let b = 0; b < bursts; b++) {
      const entry = profileFor(tier, random() < 0.8 ? "default" : "search");
      const n = entry.checks.length;
      inputs[n] ??= new Array<LimitState | undefined>(n).fill(undefined);
      outputs[n] ??= new Array<LimitState | undefined>(n).fill(undefined);
      const input = inputs[n];
      const output = outputs[n];
      for (let k = 0; k < BURST; k++, i++) {
        // Redis TIME has microseconds: times are whole microseconds, as recorded.
        const t = dayStartMs + Math.round(((starts[b] ?? 0) + k * BURST_SPACING_MS) * 1000) / 1000;
        for (let j = 0; j < n; j++) input[j] = states[entry.slots[j] ?? 0];
        const bound = decideLayeredBinding(input, entry.checks, t, entry.cost, output, scratch);
        for (let j = 0; j < n; j++) {
          const next = output[j];
          if (next !== undefined) states[entry.slots[j] ?? 0] = next;
        }
        timeMs[i] = t;
        profile[i] = entry.id;
        flags[i] = FLAG_STORE_TIME | (scratch.isAllowed ? FLAG_ALLOWED : 0);
        binding[i] = bound === -1 ? NO_BINDING : bound;
      }
    }
  }
  return { perCustomer, timeMs, profile, flags, binding, profiles };
}

/** The day as the worker stores it: per gateway and 5 minutes, deflated; `keep` picks subjects. */
async function storeDay(
  db: PrismaClient,
  day: GeneratedDay,
  dayStartMs: number,
  sampleRate: number,
): Promise<{ rows: number; bytes: number; requests: number }> {
  const chunks = DAY_MS / CHUNK_MS + 1;
  const slots = chunks * 2;
  const isKept = Array.from({ length: CUSTOMERS }, (_, c) =>
    isSampledSubject(`c:bench-${c}`, sampleRate),
  );
  const counts = new Uint32Array(slots + 1);
  const n = day.timeMs.length;
  const slotOf = (i: number) => {
    const c = Math.floor(i / day.perCustomer);
    return Math.floor(((day.timeMs[i] ?? 0) - dayStartMs) / CHUNK_MS) * 2 + (c % 2);
  };
  for (let i = 0; i < n; i++) {
    if (!isKept[Math.floor(i / day.perCustomer)]) continue;
    const s = slotOf(i) + 1;
    counts[s] = (counts[s] ?? 0) + 1;
  }
  for (let s = 0; s < slots; s++) counts[s + 1] = (counts[s + 1] ?? 0) + (counts[s] ?? 0);
  const fill = counts.slice(0, slots);
  const order = new Uint32Array(counts[slots] ?? 0);
  for (let i = 0; i < n; i++) {
    if (!isKept[Math.floor(i / day.perCustomer)]) continue;
    const s = slotOf(i);
    order[fill[s] ?? 0] = i;
    fill[s] = (fill[s] ?? 0) + 1;
  }
  let rows = 0;
  let bytes = 0;
  let pending: Parameters<PrismaClient["trafficBatch"]["createMany"]>[0] extends infer A
    ? A extends { data: infer D }
      ? D extends readonly (infer R)[]
        ? R[]
        : never
      : never
    : never = [];
  for (let s = 0; s < slots; s++) {
    const from = counts[s] ?? 0;
    const to = counts[s + 1] ?? 0;
    if (to === from) continue;
    const count = to - from;
    const timeMs = new Float64Array(count);
    const subject = new Uint32Array(count);
    const profile = new Uint32Array(count);
    const flags = new Uint8Array(count);
    const binding = new Uint8Array(count);
    const subjects: string[] = [];
    const local = new Map<number, number>();
    let firstMs = Number.POSITIVE_INFINITY;
    let lastMs = Number.NEGATIVE_INFINITY;
    for (let k = 0; k < count; k++) {
      const i = order[from + k] ?? 0;
      const c = Math.floor(i / day.perCustomer);
      let id = local.get(c);
      if (id === undefined) {
        id = subjects.length;
        subjects.push(`c:bench-${c}`);
        local.set(c, id);
      }
      const t = day.timeMs[i] ?? 0;
      if (t < firstMs) firstMs = t;
      if (t > lastMs) lastMs = t;
      timeMs[k] = t;
      subject[k] = id;
      profile[k] = day.profile[i] ?? 0;
      flags[k] = day.flags[i] ?? 0;
      binding[k] = day.binding[i] ?? 0;
    }
    const payload = deflateRawSync(
      encodeTrafficBatch({
        gatewayId: `bench-gw-${s % 2}`,
        sampleRate,
        dropped: 0,
        count,
        subjects,
        profiles: day.profiles,
        timeMs,
        subject,
        profile,
        order: new Uint16Array(count),
        flags,
        binding,
      }),
      { level: 1 },
    );
    bytes += payload.byteLength;
    pending.push({
      gatewayId: `bench-gw-${s % 2}`,
      firstAt: new Date(Math.floor(firstMs)),
      lastAt: new Date(Math.ceil(lastMs)),
      requests: count,
      dropped: 0,
      sampleRate,
      payload: new Uint8Array(payload),
    });
    if (pending.length >= 32) {
      await db.trafficBatch.createMany({ data: pending });
      rows += pending.length;
      pending = [];
    }
  }
  if (pending.length > 0) {
    await db.trafficBatch.createMany({ data: pending });
    rows += pending.length;
  }
  return { rows, bytes, requests: order.length };
}

function describeResult(label: string, result: BacktestResult, seconds: number): void {
  const pro = result.byTier.find((tier) => tier.tier === "pro");
  console.log(
    `  ${label}: ${seconds.toFixed(2)} s   ${result.trust.recordedRequests.toLocaleString("en")} recorded requests (estimate ${Math.round(result.trust.estimatedRequests).toLocaleString("en")}), ${result.replayedRequests.toLocaleString("en")} replayed twice; fidelity ${result.trust.fidelity.matched}/${result.trust.fidelity.compared}`,
  );
  if (pro !== undefined) {
    console.log(
      `    pro traffic: rejected ${((pro.nowRejected / pro.requests) * 100).toFixed(2)} % now, ${((pro.draftRejected / pro.requests) * 100).toFixed(2)} % under the draft; ${pro.customersAffected} customers affected; ${Math.round(result.totals.moreRejected).toLocaleString("en")} more rejections in all`,
    );
  }
}

/** Generates, stores and backtests the day; returns the summary lines. */
async function recordedDay(): Promise<string[]> {
  const databaseUrl = withDatabase(
    loadEnv().DATABASE_URL,
    `lp_bench_backtest_${randomBytes(4).toString("hex")}`,
  );
  await createDatabase(databaseUrl);
  const db = createPrisma({ databaseUrl, poolSize: 2 });
  try {
    await applyMigrations(databaseUrl);
    const dayStartMs = Date.UTC(2026, 10, 30);
    const dayEndMs = dayStartMs + DAY_MS;
    const deps = { db, publisher: null, clock: { nowMs: () => dayStartMs } };
    await importPolicy(
      examplePolicyForSeed(dayStartMs),
      {
        actor: { type: "system", id: "bench", name: "bench" },
        reason: "backtest bench",
      },
      deps,
    );
    const current = await readCompiledSnapshot("all", deps);
    let startMs = performance.now();
    const day = generateDay(current, dayStartMs);
    console.log(
      `\ngenerated a day of ${day.timeMs.length.toLocaleString("en")} requests (${CUSTOMERS.toLocaleString("en")} customers, bursts of ${BURST}; outcomes by the core) in ${((performance.now() - startMs) / 1000).toFixed(1)} s`,
    );
    startMs = performance.now();
    const stored = await storeDay(db, day, dayStartMs, 1);
    console.log(
      `stored ${stored.requests.toLocaleString("en")} requests in ${stored.rows} rows, ${(stored.bytes / 1024 / 1024).toFixed(1)} MiB deflated (${(stored.bytes / stored.requests).toFixed(2)} bytes a request; ${(((stored.bytes / stored.requests) * 1e6) / 1024 / 1024).toFixed(1)} MiB per million requests) in ${((performance.now() - startMs) / 1000).toFixed(1)} s`,
    );
    const draft = { kind: "tier" as const, name: "pro", limit: tokenBucket(20, 10) };
    const backtest = { draft, windowMs: DAY_MS - 15 * 60_000, warmUpMs: 15 * 60_000 };
    console.log(
      `\nbacktest of a pro-tier cut (200/100 to 20/10) over the recorded day, loading from Postgres included:`,
    );
    collectGarbage();
    startMs = performance.now();
    const cpuBefore = process.cpuUsage();
    const full = await runBacktest(backtest, { db, clock: { nowMs: () => dayEndMs } });
    const fullS = (performance.now() - startMs) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    describeResult("every request recorded", full, fullS);
    console.log(
      `    of which this process's CPU: ${((cpu.user + cpu.system) / 1e6).toFixed(2)} s (the rest is waiting: for Postgres, and for a core on a loaded machine)`,
    );
    const fullVerdict = recordTarget({
      group: "backtest speed",
      name: "a recorded day loaded from Postgres and replayed",
      measured: `${(full.recordedRequests + full.warmUpRequests).toLocaleString("en")} requests in ${fullS.toFixed(2)} s`,
      aim: `under ${TARGET_S} s for >= 10,000,000 requests`,
      isMet: fullS < TARGET_S && day.timeMs.length >= 10_000_000,
    });
    console.log(`    ${fullVerdict}   load ${load()}`);
    // Where the time goes: the same two parts again, each timed on its own.
    const fromMs = dayEndMs - backtest.windowMs;
    const span = { fromMs: fromMs - backtest.warmUpMs, toMs: dayEndMs };
    const cpuSeconds = (since: NodeJS.CpuUsage) => {
      const used = process.cpuUsage(since);
      return (used.user + used.system) / 1e6;
    };
    collectGarbage();
    startMs = performance.now();
    let partCpu = process.cpuUsage();
    const loaded = await loadTrafficWindow(db, span);
    const loadS = (performance.now() - startMs) / 1000;
    const loadCpuS = cpuSeconds(partCpu);
    const drafted = applyBacktestDraft(current, ZBacktestDraft.parse(draft), span);
    collectGarbage();
    startMs = performance.now();
    partCpu = process.cpuUsage();
    replayTraffic(loaded.window, { fromMs, toMs: dayEndMs, current, draft: drafted });
    const replayS = (performance.now() - startMs) / 1000;
    const replayCpuS = cpuSeconds(partCpu);
    const parts = `parts timed again on their own: loading ${loaded.window.count.toLocaleString("en")} requests from Postgres (${loaded.batchesRead} batches) ${loadS.toFixed(2)} s (this process's CPU ${loadCpuS.toFixed(2)} s, inflating threads included), replay ${replayS.toFixed(2)} s (CPU ${replayCpuS.toFixed(2)} s)`;
    console.log(`    ${parts}   load ${load()}`);

    await db.trafficBatch.deleteMany({});
    const sampled = await storeDay(db, day, dayStartMs, 0.1);
    startMs = performance.now();
    const estimate = await runBacktest(backtest, { db, clock: { nowMs: () => dayEndMs } });
    describeResult(
      `10 % of subjects recorded (${sampled.requests.toLocaleString("en")} requests)`,
      estimate,
      (performance.now() - startMs) / 1000,
    );
    const error = (a: number, b: number) => (b === 0 ? 0 : Math.abs(a - b) / b);
    let minuteError = 0;
    let minuteBase = 0;
    full.minutes.forEach((minute, index) => {
      const other = estimate.minutes[index];
      if (other === undefined) return;
      minuteError += Math.abs(other.draftRejected - minute.draftRejected);
      minuteBase += minute.draftRejected;
    });
    const mismatch = `mismatch under sampling (10 % of subjects): more rejections ${(error(estimate.totals.moreRejected, full.totals.moreRejected) * 100).toFixed(2)} % off, draft rejections per minute ${((minuteError / Math.max(1, minuteBase)) * 100).toFixed(2)} % off (mean absolute), customers affected ${estimate.customersAffected} of ${full.customersAffected} seen (each sampled one exact)`;
    console.log(`    ${mismatch}`);
    return [fullVerdict, parts, mismatch];
  } finally {
    await db.$disconnect();
    await dropDatabase(databaseUrl);
  }
}

export async function run(): Promise<void> {
  console.log(`machine: ${availableParallelism()} cores, load ${load()}`);
  const recording =
    process.env.BENCH_BACKTEST_SKIP_HTTP === "1"
      ? ["recording cost: skipped (BENCH_BACKTEST_SKIP_HTTP=1)"]
      : await recordingCost();
  const day =
    process.env.BENCH_BACKTEST_SKIP_DAY === "1"
      ? ["recorded day: skipped (BENCH_BACKTEST_SKIP_DAY=1)"]
      : await recordedDay();
  console.log("\nsummary:");
  for (const line of [...day, ...recording]) console.log(`  ${line}`);
  console.log(`  ${loadLine("at the end")}`);
}
