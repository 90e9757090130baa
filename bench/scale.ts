/**
 * Scale suite: what an incident raise costs as the policy grows. For each size N (default 1,000,
 * 100,000 and 1,000,000 customers, each with one standing override), in a scratch database named
 * `<BENCH_DATABASE_PREFIX><N>_<random>` (default prefix `lp_bench_scale_`, migrated, dropped at
 * the end) under a Redis key prefix of its own:
 *
 * 1. the policy is imported through `importPolicy` (timed, with its phases), published, and,
 *    with BENCH_SCALE_ROUND_TRIP=1 (default), exported, imported into a second scratch database
 *    and exported again (the two exports must be byte-identical);
 * 2. ten enforcers start as separate processes (`bench/scale-enforcer.ts`) and load it; each
 *    reports its heap after a full GC before and after;
 * 3. once every size is set up (its enforcers stay running), BENCH_SCALE_RAISES (default 200)
 *    incidents per size are raised through `raiseIncident`, one size after the other in turn (so
 *    a load change on this shared machine falls on every size alike), each for another customer,
 *    after 3 unmeasured rounds. Per raise: the service time (the call, its transaction and its
 *    publication included), the time from the call to the moment the last of the size's ten
 *    enforcers applied the version, and the bytes of the delta published (the log entry; the
 *    announcement carries the same delta).
 *
 * The competitor is the publication this replaces, measured in the same run on the same policy:
 * the whole compiled snapshot every change wrote to Redis and every enforcer read, prepared and
 * hashed again (`legacy bytes per change`, and the time to compile, serialise and hash it).
 *
 * Targets (the issue's): raise -> all enforcers applied p99 under 50 ms at every size; the
 * largest size's p99 within 1.5x the smallest's, from the same run; bytes per change independent
 * of size (within 10 % of each other). Each is printed with PASS or SHORT.
 *
 * BENCH_SCALE_SIZES=1000,100000 changes the sizes; BENCH_SCALE_ENFORCERS the enforcer count.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { availableParallelism, loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseSnapshot, type TPolicyDocumentInput } from "@limitplane/enforcer/policy";
import { createRedisClient } from "@limitplane/enforcer/publication";
import { deleteKeysUnder } from "@limitplane/enforcer/testing";
import { raiseIncident } from "@/lib/control/incident/raise-incident";
import { publishPendingSnapshots } from "@/lib/control/outbox/publish-pending-snapshots";
import { exportPolicy } from "@/lib/control/policy/export-policy";
import { readCompiledSnapshot } from "@/lib/control/policy/get-current-snapshot";
import { type ImportProgress, importPolicy } from "@/lib/control/policy/import-policy";
import { createPrisma } from "@/lib/server/db";
import { loadEnv } from "@/lib/server/env";
import type { ControlDeps } from "../lib/control/deps";
import { systemClock } from "../lib/server/composition";
import { createDatabase, dropDatabase, withDatabase } from "../scripts/db/databases";
import { applyMigrations } from "../scripts/db/schema-engine";
import { examplePolicyForSeed } from "../scripts/seed";
import { Targets, verdictOf } from "./results";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const SIZES = (process.env.BENCH_SCALE_SIZES ?? "1000,100000,1000000")
  .split(",")
  .map((size) => Number(size.trim()))
  .filter((size) => Number.isSafeInteger(size) && size > 0);
const DATABASE_PREFIX = process.env.BENCH_DATABASE_PREFIX ?? "lp_bench_scale_";
const RAISES = Number(process.env.BENCH_SCALE_RAISES ?? 200);
const WARMUP = 3;
const ENFORCERS = Number(process.env.BENCH_SCALE_ENFORCERS ?? 10);
const ROUND_TRIP = process.env.BENCH_SCALE_ROUND_TRIP !== "0";
const TARGET_P99_MS = 50;
const TARGET_GROWTH = 1.5;

const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(" ");
const ms = (value: number) => `${value.toFixed(1)} ms`;
const seconds = (value: number) => `${(value / 1000).toFixed(1)} s`;
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  return (
    sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN
  );
}

const customerId = (index: number) => `bulk-${String(index).padStart(7, "0")}`;

/**
 * The example policy grown to `size` customers, each with one account override (the example's
 * own customers and override included, so a million stays within the caps of a million each).
 */
function documentOf(size: number, nowMs: number): TPolicyDocumentInput {
  const doc = examplePolicyForSeed(nowMs) as TPolicyDocumentInput;
  const bulk = size - (doc.customers?.length ?? 0);
  return {
    ...doc,
    customers: [
      ...(doc.customers ?? []),
      ...Array.from({ length: bulk }, (_, index) => ({
        id: customerId(index),
        displayName: `Customer ${index}`,
        tier: index % 3 === 0 ? "pro" : "free",
      })),
    ],
    customerOverrides: [
      ...(doc.customerOverrides ?? []),
      ...Array.from({ length: bulk }, (_, index) => ({
        customerId: customerId(index),
        endpointClass: null,
        limit: {
          algorithm: "token-bucket" as const,
          capacity: 100 + (index % 50),
          refillPerSec: 20,
        },
      })),
    ],
  };
}

interface EnforcerProcess {
  readonly child: ChildProcess;
  readonly ready: Promise<{
    heapBefore: number;
    heapAfter: number;
    overrides: number;
    loadMs: number;
  }>;
  /** Wall-clock ms at which each version was applied. */
  readonly appliedAt: Map<number, number>;
  version: number;
  onApplied: (() => void) | null;
}

function startEnforcer(prefix: string, redisUrl: string): EnforcerProcess {
  const child = spawn(
    process.execPath,
    ["--conditions=react-server", "--expose-gc", "--import", "tsx", "bench/scale-enforcer.ts"],
    {
      cwd: ROOT,
      env: { ...process.env, BENCH_PREFIX: prefix, BENCH_REDIS_URL: redisUrl },
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    },
  );
  const process_: EnforcerProcess = {
    child,
    appliedAt: new Map(),
    version: 0,
    onApplied: null,
    ready: new Promise((resolve, reject) => {
      child.on("exit", (code) => reject(new Error(`an enforcer exited with ${code}`)));
      child.on("message", (message: Record<string, number | string>) => {
        if (message.type === "ready") {
          process_.version = Number(message.version);
          resolve({
            heapBefore: Number(message.heapBefore),
            heapAfter: Number(message.heapAfter),
            overrides: Number(message.overrides),
            loadMs: Number(message.loadMs),
          });
        } else if (message.type === "applied") {
          const version = Number(message.version);
          process_.version = Math.max(process_.version, version);
          process_.appliedAt.set(version, Number(message.atMs));
          process_.onApplied?.();
        }
      });
    }),
  };
  return process_;
}

function allApplied(enforcers: readonly EnforcerProcess[], version: number, timeoutMs: number) {
  return new Promise<boolean>((resolve) => {
    const check = () => {
      if (enforcers.every((enforcer) => enforcer.version >= version)) {
        clearTimeout(timer);
        for (const enforcer of enforcers) enforcer.onApplied = null;
        resolve(true);
      }
    };
    const timer = setTimeout(() => {
      for (const enforcer of enforcers) enforcer.onApplied = null;
      resolve(false);
    }, timeoutMs);
    for (const enforcer of enforcers) enforcer.onApplied = check;
    check();
  });
}

interface SizeEnvironment {
  readonly size: number;
  readonly deps: ControlDeps;
  readonly enforcers: readonly EnforcerProcess[];
  readonly importMs: number;
  readonly roundTrip: string;
  readonly legacyBytes: number;
  readonly legacyCompileMs: number;
  /** Median heap of the enforcers with the policy, and its growth from before they had one. */
  readonly heapAfter: number;
  readonly heapDelta: number;
  readonly service: number[];
  readonly applied: number[];
  readonly bytes: number[];
  missed: number;
  close(): Promise<void>;
}

async function scratchDatabase(tag: string): Promise<string> {
  const url = withDatabase(
    loadEnv().DATABASE_URL,
    `${DATABASE_PREFIX}${tag}_${randomBytes(3).toString("hex")}`,
  );
  await createDatabase(url);
  await applyMigrations(url);
  return url;
}

const BENCH_ACTOR = { type: "system" as const, id: null, name: "bench" };

/** A size's database, policy, Redis prefix and enforcers, ready for raises. */
async function setUpSize(size: number, redisUrl: string): Promise<SizeEnvironment> {
  console.log(`\n--- ${size.toLocaleString("en")} overrides (load ${load()}) ---`);
  const databaseUrl = await scratchDatabase(String(size));
  const copyUrl = ROUND_TRIP ? await scratchDatabase(`${size}_copy`) : null;
  const db = createPrisma({ databaseUrl, poolSize: 4 });
  const redis = createRedisClient("control", { url: redisUrl, commandTimeoutMs: 30_000 });
  const prefix = `lpbench:${randomBytes(3).toString("hex")}:`;
  const enforcers: EnforcerProcess[] = [];
  const close = async () => {
    for (const enforcer of enforcers) enforcer.child.disconnect?.();
    await Promise.all(
      enforcers.map(
        (enforcer) =>
          new Promise<void>((resolve) => {
            if (enforcer.child.exitCode !== null) resolve();
            else enforcer.child.once("exit", () => resolve());
            setTimeout(() => {
              enforcer.child.kill("SIGKILL");
              resolve();
            }, 10_000);
          }),
      ),
    );
    await deleteKeysUnder(redis, prefix).catch(() => undefined);
    redis.disconnect();
    await db.$disconnect();
    await dropDatabase(databaseUrl);
    if (copyUrl !== null) await dropDatabase(copyUrl);
  };
  try {
    const deps: ControlDeps = {
      db,
      publisher: { db, redis, prefix, clock: systemClock },
      clock: systemClock,
    };
    const document = documentOf(size, Date.now());
    let lastPhase = "";
    const importStart = performance.now();
    const imported = await importPolicy(
      document,
      { actor: BENCH_ACTOR, reason: "scale bench" },
      deps,
      {
        onProgress: (progress: ImportProgress) => {
          if (progress.phase !== lastPhase) {
            console.log(
              `  import: ${progress.phase} at ${seconds(performance.now() - importStart)}`,
            );
            lastPhase = progress.phase;
          }
        },
      },
    );
    const importMs = performance.now() - importStart;
    const overrides = await db.customerOverride.count();
    console.log(
      `  import: ${seconds(importMs)} (version ${imported.policyVersion}, ${overrides.toLocaleString("en")} overrides; its publication, a whole snapshot, included)`,
    );
    // Whatever the import's own publication left (none, unless Redis was busy).
    await publishPendingSnapshots({ db, redis, prefix, clock: systemClock }, "wait");

    let roundTrip = "skipped";
    if (copyUrl !== null) {
      const copy = createPrisma({ databaseUrl: copyUrl, poolSize: 4 });
      try {
        const exportStart = performance.now();
        const first = await exportPolicy({}, { db, clock: systemClock });
        const exportMs = performance.now() - exportStart;
        const copyStart = performance.now();
        await importPolicy(
          JSON.parse(first.document),
          { actor: BENCH_ACTOR, reason: "round trip" },
          { db: copy, publisher: null, clock: systemClock },
        );
        const copyMs = performance.now() - copyStart;
        const second = await exportPolicy({}, { db: copy, clock: systemClock });
        const isIdentical = second.document === first.document;
        roundTrip = `${isIdentical ? "byte-identical" : "DIFFERENT"} (${mb(first.document.length)}; export ${seconds(exportMs)}, import ${seconds(copyMs)})`;
        console.log(`  export -> import -> export: ${roundTrip}`);
      } finally {
        await copy.$disconnect();
      }
    }

    // The competitor: the whole snapshot a change used to compile, write and have every
    // enforcer read and verify.
    const legacyStart = performance.now();
    const whole = await readCompiledSnapshot("all", { db });
    const legacyJson = JSON.stringify(whole);
    const legacyParsed = parseSnapshot(legacyJson);
    const legacyCompileMs = performance.now() - legacyStart;
    if (!legacyParsed.ok) throw new Error("the whole snapshot does not parse");

    const enforcerStart = performance.now();
    for (let index = 0; index < ENFORCERS; index++) enforcers.push(startEnforcer(prefix, redisUrl));
    const ready = await Promise.all(enforcers.map((enforcer) => enforcer.ready));
    console.log(
      `  ${ENFORCERS} enforcers loaded it in ${seconds(performance.now() - enforcerStart)} (each: ${ready.map((item) => seconds(item.loadMs)).join(", ")})`,
    );
    return {
      size,
      deps,
      enforcers,
      importMs,
      roundTrip,
      legacyBytes: legacyJson.length,
      legacyCompileMs,
      heapAfter: percentile(
        ready.map((item) => item.heapAfter),
        50,
      ),
      heapDelta: percentile(
        ready.map((item) => item.heapAfter - item.heapBefore),
        50,
      ),
      service: [],
      applied: [],
      bytes: [],
      missed: 0,
      close,
    };
  } catch (error: unknown) {
    await close();
    throw error;
  }
}

/** One raise (the `index`th customer's) and its propagation to every enforcer of `env`. */
async function raiseOnce(env: SizeEnvironment, index: number, isMeasured: boolean): Promise<void> {
  const t0 = performance.timeOrigin + performance.now();
  const result = await raiseIncident(
    { customerId: customerId(index), factor: 2, durationMs: 3_600_000 },
    { actor: BENCH_ACTOR, reason: "scale bench raise" },
    env.deps,
  );
  const serviceMs = performance.timeOrigin + performance.now() - t0;
  const version = result.policyVersion;
  if (version === null) throw new Error("a raise produced no version");
  const isApplied = await allApplied(env.enforcers, version, 30_000);
  if (!isMeasured) return;
  env.service.push(serviceMs);
  if (!isApplied) {
    env.missed++;
    return;
  }
  env.applied.push(
    Math.max(
      ...env.enforcers.map(
        (enforcer) => enforcer.appliedAt.get(version) ?? Number.POSITIVE_INFINITY,
      ),
    ) - t0,
  );
  const row = await env.deps.db.policyVersion.findUniqueOrThrow({
    where: { version },
    select: { deltaBytes: true },
  });
  env.bytes.push(row.deltaBytes ?? Number.NaN);
}

export async function run(): Promise<void> {
  console.log(
    `machine: ${availableParallelism()} cores, load ${load()}; sizes ${SIZES.map((size) => size.toLocaleString("en")).join(", ")}; ${ENFORCERS} enforcer processes per size; ${RAISES} raises per size after ${WARMUP} warm-up, alternating between the sizes; scratch databases ${DATABASE_PREFIX}*`,
  );
  const redisUrl = loadEnv().REDIS_URL;
  const environments: SizeEnvironment[] = [];
  try {
    for (const size of SIZES) environments.push(await setUpSize(size, redisUrl));
    console.log(
      `\nraising: one raise per size in turn, ${WARMUP + RAISES} rounds (load ${load()})`,
    );
    for (let round = 0; round < WARMUP + RAISES; round++) {
      for (const env of environments) await raiseOnce(env, round, round >= WARMUP);
    }
    report(environments);
  } finally {
    for (const env of environments) await env.close();
  }
}

function report(environments: readonly SizeEnvironment[]): void {
  const smallest = environments[0];
  console.log(`\nper size (load ${load()})`);
  for (const env of environments) {
    const appliedP99 = percentile(env.applied, 99);
    // The heap each override adds, from the difference with the smallest size (what the
    // enforcer runtime itself holds cancels out), and from the heap before the policy.
    const marginal =
      smallest !== undefined && env.size > smallest.size
        ? (env.heapAfter - smallest.heapAfter) / (env.size - smallest.size)
        : Number.NaN;
    console.log(`  ${env.size.toLocaleString("en")} overrides`);
    console.log(`    import ${seconds(env.importMs)}; export -> import -> export ${env.roundTrip}`);
    console.log(
      `    raise service time p50 ${ms(percentile(env.service, 50))}, p99 ${ms(percentile(env.service, 99))}; raise -> all ${ENFORCERS} applied p50 ${ms(percentile(env.applied, 50))}, p99 ${ms(appliedP99)}${env.missed > 0 ? `, ${env.missed} not applied within 30 s` : ""} (target p99 < ${TARGET_P99_MS} ms: ${verdictOf(appliedP99 < TARGET_P99_MS && env.missed === 0)})`,
    );
    const bytes = percentile(env.bytes, 50);
    console.log(
      `    bytes published per change: ${bytes} (the delta, in the log and the announcement); competitor, the whole snapshot every change used to publish: ${mb(env.legacyBytes)} (${(env.legacyBytes / bytes).toFixed(0)}x), compiled and verified in ${ms(env.legacyCompileMs)}`,
    );
    console.log(
      `    enforcer heap with the policy ${mb(env.heapAfter)} (median of ${ENFORCERS}); ${(env.heapDelta / env.size).toFixed(0)} bytes per override over the heap before it${Number.isNaN(marginal) ? "" : `, ${marginal.toFixed(0)} bytes per override more than at ${smallest?.size.toLocaleString("en")}`}`,
    );
  }
  const targets = new Targets();
  for (const env of environments) {
    const appliedP99 = percentile(env.applied, 99);
    targets.holds(
      `raise -> all ${ENFORCERS} enforcers applied, p99 at ${env.size.toLocaleString("en")} overrides`,
      `${ms(appliedP99)}${env.missed > 0 ? `, ${env.missed} not applied within 30 s` : ""}`,
      appliedP99 < TARGET_P99_MS && env.missed === 0,
      `< ${TARGET_P99_MS} ms, every raise applied`,
    );
  }
  const largest = environments.at(-1);
  if (smallest !== undefined && largest !== undefined && environments.length > 1) {
    const growth = percentile(largest.applied, 99) / percentile(smallest.applied, 99);
    targets.holds(
      `raise -> applied p99 at ${largest.size.toLocaleString("en")} / at ${smallest.size.toLocaleString("en")}`,
      `${growth.toFixed(2)}x`,
      growth <= TARGET_GROWTH,
      `<= ${TARGET_GROWTH}x`,
    );
    const bytes = environments.map((env) => percentile(env.bytes, 50));
    const spread = Math.max(...bytes) / Math.min(...bytes);
    targets.holds(
      "bytes published per change, independent of size",
      `${bytes.join(", ")} bytes, spread ${((spread - 1) * 100).toFixed(1)} %`,
      spread <= 1.1,
      "spread <= 10 %",
    );
  }
  targets.print("scale targets");
  console.log(`  load at the end ${load()}`);
}
