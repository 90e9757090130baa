/**
 * Baseline suite: the hot path of this checkout against an earlier commit's, alternating within
 * one run, so a refactoring can show it kept the speed ("unchanged" means within the run's
 * spread). The earlier enforcer source is taken with `git archive` into `bench/.baseline/<ref>/`
 * (ignored by git) and loaded beside the current one; each side gets its own redis-server, so the
 * two versions' Redis functions never meet.
 *
 * Each figure is operations per CPU second of the bench process (`process.cpuUsage`), which the
 * waits of a busy host do not stretch as they stretch wall time. Rows, each measured on both
 * sides in the same trial, the side that goes first swapped every trial:
 * - core: `MemoryStore.decideSync` on a hot key (admitted, rejected), round robin over 100k keys,
 *   and three layers on a hot key;
 * - redis: `RedisStore.decide` at 64 in flight over 10k subjects, one limit and three layers;
 * - enforcer: `enforcer.check` in process for 1,000 customers in turn, each holding a lease
 *   (admitted) or over its day (the cached denial).
 *
 * `BENCH_BASELINE_REF` names the earlier commit (default: the last commit before the enforcer
 * was built to JavaScript and its options and combine were regrouped). The earlier side must
 * offer the same calls used here: `MemoryStore`, `RedisStore({ client, keyPrefix })`,
 * `createEnforcer` (flat or grouped options; both are handled), `publishTestSnapshot` and
 * `exampleSnapshot`.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { Redis } from "ioredis";
import {
  type BenchRedis,
  benchRedis,
  loadLine,
  MIN_RUNS,
  median,
  pairedRatios,
  summary,
} from "./fair";
import { BENCH_LIMITS } from "./http-policy";
import { ONE_LIMIT, THREE_LAYERS } from "./redis-workload";
import { Targets } from "./results";

const DEFAULT_REF = "57b72b8";
const TRIALS = Math.max(MIN_RUNS, 7);
const CORE_OPS = 200_000;
const KEY_COUNT = 100_000;
const REDIS_SUBJECTS = 10_000;
const REDIS_IN_FLIGHT = 64;
const REDIS_TRIAL_MS = 500;
const CUSTOMERS = 1_000;
const ENFORCER_OPS = 20_000;

// Loosely typed on purpose: each side is a different version of the package, loaded at run time.
// biome-ignore lint/suspicious/noExplicitAny: two versions of one module, checked by use.
type Module = any;

/** One version of the enforcer package: its entry points, loaded from source. */
interface Version {
  readonly name: string;
  readonly root: Module;
  readonly limiter: Module;
  readonly testing: Module;
}

async function loadVersion(name: string, sourceDir: string): Promise<Version> {
  const at = (entry: string) => import(path.join(sourceDir, entry));
  return {
    name,
    root: await at("index.ts"),
    limiter: await at("limiter/index.ts"),
    testing: await at("testing/index.ts"),
  };
}

/** The earlier commit's enforcer source, extracted once per ref. */
function baselineSource(ref: string): string {
  const repository = path.resolve(import.meta.dirname, "..");
  const commit = execFileSync("git", ["rev-parse", "--short=12", `${ref}^{commit}`], {
    cwd: repository,
    encoding: "utf8",
  }).trim();
  const directory = path.join(repository, "bench", ".baseline", commit);
  const source = path.join(directory, "packages", "enforcer", "src");
  if (!existsSync(source)) {
    mkdirSync(directory, { recursive: true });
    const archive = execFileSync("git", ["archive", commit, "packages/enforcer/src"], {
      cwd: repository,
      maxBuffer: 256 * 1024 * 1024,
    });
    execFileSync("tar", ["-x", "-C", directory], { input: archive });
  }
  return source;
}

/** One row's measure on one side: operations per CPU second of this process in one trial. */
type Measure = () => Promise<number>;

interface Row {
  readonly name: string;
  readonly sides: readonly [old: Measure, current: Measure];
}

/** CPU seconds this process has used (user + system), which a busy host's waits do not add to. */
function cpuSeconds(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
}

/** Operations per CPU second of `ops` synchronous calls. */
function opsPerCpuSecondSync(ops: number, body: (i: number) => unknown): number {
  const start = cpuSeconds();
  for (let i = 0; i < ops; i++) body(i);
  return ops / (cpuSeconds() - start);
}

/** Operations per CPU second of `ops` calls awaited one after another. */
async function opsPerCpuSecondAwaited(
  ops: number,
  body: (i: number) => Promise<unknown>,
): Promise<number> {
  const start = cpuSeconds();
  for (let i = 0; i < ops; i++) await body(i);
  return ops / (cpuSeconds() - start);
}

/**
 * `REDIS_IN_FLIGHT` loops each awaiting one decision after another for `REDIS_TRIAL_MS`:
 * decisions per CPU second of this process (the client's work; the script Redis runs is the
 * same on both sides, and the server shares the cores).
 */
async function opsPerCpuSecondInFlight(decide: (i: number) => Promise<unknown>): Promise<number> {
  let done = 0;
  const endAt = performance.now() + REDIS_TRIAL_MS;
  const start = cpuSeconds();
  await Promise.all(
    Array.from({ length: REDIS_IN_FLIGHT }, async (_, lane) => {
      let i = lane;
      while (performance.now() < endAt) {
        await decide(i);
        i += REDIS_IN_FLIGHT;
        done++;
      }
    }),
  );
  return done / (cpuSeconds() - start);
}

const ROOMY = {
  scope: "api",
  limit: { algorithm: "token-bucket", capacity: 1e12, refillPerSec: 1e9 },
  mode: "enforce",
} as const;
const EXHAUSTED = {
  scope: "api",
  limit: { algorithm: "token-bucket", capacity: 1, refillPerSec: 1e-6 },
  mode: "enforce",
} as const;
const THREE_ROOMY = [
  { ...ROOMY, scope: "ceiling", bucket: "ceiling" },
  { ...ROOMY, scope: "tier:pro", bucket: "account" },
  { ...ROOMY, scope: "tier:pro/endpoint:search", bucket: "endpoint:search" },
] as const;

function coreRows(version: Version): Measure[] {
  const subjects = Array.from({ length: KEY_COUNT }, (_, i) => `user-${i}`);
  const hot = new version.limiter.MemoryStore({ maxKeys: KEY_COUNT });
  const hotRoomy = { subject: "hot", checks: [ROOMY] };
  const rejecting = new version.limiter.MemoryStore({ maxKeys: KEY_COUNT });
  const hotExhausted = { subject: "hot", checks: [EXHAUSTED] };
  rejecting.decideSync(hotExhausted);
  const many = new version.limiter.MemoryStore({ maxKeys: KEY_COUNT });
  const manyInputs = subjects.map((subject) => ({ subject, checks: [ROOMY] }));
  const layered = new version.limiter.MemoryStore({ maxKeys: KEY_COUNT });
  const hotLayered = { subject: "hot", checks: THREE_ROOMY };
  return [
    async () => opsPerCpuSecondSync(CORE_OPS, () => hot.decideSync(hotRoomy)),
    async () => opsPerCpuSecondSync(CORE_OPS, () => rejecting.decideSync(hotExhausted)),
    async () => opsPerCpuSecondSync(CORE_OPS, (i) => many.decideSync(manyInputs[i % KEY_COUNT])),
    async () => opsPerCpuSecondSync(CORE_OPS, () => layered.decideSync(hotLayered)),
  ];
}

const CORE_NAMES = [
  "core: allow, hot key (decideSync)",
  "core: reject, hot key (decideSync)",
  "core: allow, 100k keys round robin (decideSync)",
  "core: allow, three layers, hot key (decideSync)",
];

async function redisRows(version: Version, server: BenchRedis, cleanups: (() => Promise<void>)[]) {
  const client = new Redis(server.url, { enableAutoPipelining: false });
  cleanups.push(async () => void client.disconnect());
  const store = new version.limiter.RedisStore({
    client,
    keyPrefix: "bench:baseline:",
    maxBatchSize: 64,
  });
  const subjects = Array.from({ length: REDIS_SUBJECTS }, (_, i) => `s${i}`);
  const pick = (i: number) => subjects[(i * 7919) % REDIS_SUBJECTS] as string;
  return [
    () => opsPerCpuSecondInFlight((i) => store.decide({ subject: pick(i), checks: ONE_LIMIT })),
    () => opsPerCpuSecondInFlight((i) => store.decide({ subject: pick(i), checks: THREE_LAYERS })),
  ];
}

const REDIS_NAMES = [
  `redis: one limit, ${REDIS_IN_FLIGHT} in flight (RedisStore.decide)`,
  `redis: three layers, ${REDIS_IN_FLIGHT} in flight (RedisStore.decide)`,
];

const silentLogger = { log() {}, info() {}, warn() {}, error() {}, debug() {} };

/** The HTTP bench's policy (`bench/http-policy.ts`), built with `version`'s own helpers. */
function snapshotOf(version: Version): unknown {
  const { exampleSnapshot, tokenBucket } = version.testing;
  return exampleSnapshot(
    (policy: Module) => {
      policy.tiers.push(
        {
          name: "wide",
          displayName: "Wide (bench)",
          limit: tokenBucket(BENCH_LIMITS.widePerSec, BENCH_LIMITS.widePerSec),
        },
        {
          name: "tight",
          displayName: "Tight (bench)",
          limit: tokenBucket(BENCH_LIMITS.tightPerDay, BENCH_LIMITS.tightPerDay / 86_400),
        },
      );
      policy.ceilings.perCustomer = tokenBucket(BENCH_LIMITS.widePerSec, BENCH_LIMITS.widePerSec);
    },
    { version: 1 },
  );
}

async function enforcerRows(
  version: Version,
  server: BenchRedis,
  cleanups: (() => Promise<void>)[],
) {
  const prefix = "bench:baseline-enforcer:";
  const admin = new Redis(server.url);
  await version.testing.publishTestSnapshot(admin, prefix, snapshotOf(version));
  admin.disconnect();
  // The current package groups its options by concern; earlier commits took them flat.
  const grouped = {
    expectedGateways: 1,
    redis: { url: server.url, keyPrefix: prefix },
    local: {},
    logger: silentLogger,
  };
  const flat = {
    expectedGateways: 1,
    redisUrl: server.url,
    keyPrefix: prefix,
    localStage: {},
    logger: silentLogger,
  };
  let enforcer: Module;
  const refusals: string[] = [];
  for (const options of [grouped, flat]) {
    const made = await version.root.createEnforcer(options).catch((error: unknown) => {
      refusals.push(String(error));
      return undefined;
    });
    if (made?.status().isReady) {
      enforcer = made;
      break;
    }
    await made?.stop();
  }
  if (enforcer === undefined) {
    throw new Error(`${version.name}: no enforcer got the policy (${refusals.join("; ")})`);
  }
  cleanups.push(() => enforcer.stop());
  const request = (customerId: string, tier: string) => ({
    customerId,
    tier,
    method: "GET",
    path: "/v1/things",
  });
  const wide = Array.from({ length: CUSTOMERS }, (_, i) => request(`wide-${i}`, "wide"));
  const tight = Array.from({ length: CUSTOMERS }, (_, i) => request(`tight-${i}`, "tight"));
  // Spend every tight customer's day, and let every wide customer's lease arrive.
  for (const input of tight) {
    for (let n = 0; n <= BENCH_LIMITS.tightPerDay; n++) await enforcer.check(input);
  }
  for (let round = 0; round < 20; round++) {
    for (const input of wide) await enforcer.check(input);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  for (const input of tight) {
    if ((await enforcer.check(input)).allowed) throw new Error(`${version.name}: tight admitted`);
  }
  return [
    () => opsPerCpuSecondAwaited(ENFORCER_OPS, (i) => enforcer.check(wide[i % CUSTOMERS])),
    () => opsPerCpuSecondAwaited(ENFORCER_OPS, (i) => enforcer.check(tight[i % CUSTOMERS])),
  ];
}

const ENFORCER_NAMES = [
  `enforcer: leased admission, ${CUSTOMERS.toLocaleString("en-US")} customers (check)`,
  `enforcer: cached denial, ${CUSTOMERS.toLocaleString("en-US")} customers (check)`,
];

export async function run(): Promise<void> {
  console.log(loadLine("at start"));
  const ref = process.env.BENCH_BASELINE_REF ?? DEFAULT_REF;
  const source = baselineSource(ref);
  const old = await loadVersion(`baseline ${ref}`, source);
  const current = await loadVersion(
    "current",
    path.resolve(import.meta.dirname, "..", "packages", "enforcer", "src"),
  );
  console.log(
    `baseline: ${ref} from ${path.relative(process.cwd(), source)}; current: this checkout`,
  );

  const servers = [await benchRedis(), await benchRedis()] as const;
  const cleanups: (() => Promise<void>)[] = [];
  try {
    const rows: Row[] = [];
    const perVersion = await Promise.all(
      [old, current].map(async (version, index) => {
        const server = servers[index] as BenchRedis;
        return [
          ...coreRows(version),
          ...(await redisRows(version, server, cleanups)),
          ...(await enforcerRows(version, server, cleanups)),
        ];
      }),
    );
    const names = [...CORE_NAMES, ...REDIS_NAMES, ...ENFORCER_NAMES];
    names.forEach((name, index) => {
      rows.push({
        name,
        sides: [perVersion[0]?.[index] as Measure, perVersion[1]?.[index] as Measure],
      });
    });

    // Warm-up, then trials: both sides of a row back to back, the first side swapped per trial.
    for (const row of rows) {
      await row.sides[0]();
      await row.sides[1]();
    }
    const figures: (readonly [number[], number[]])[] = rows.map(() => [[], []]);
    for (let trial = 0; trial < TRIALS; trial++) {
      const order = trial % 2 === 0 ? [0, 1] : [1, 0];
      for (const [index, row] of rows.entries()) {
        for (const side of order) {
          const value = await (row.sides[side as 0 | 1] as Measure)();
          const series = figures[index] as readonly [number[], number[]];
          series[side as 0 | 1].push(value);
        }
      }
    }

    console.log(loadLine("at end"));
    console.log(`\noperations per CPU second, median [min-max] of ${TRIALS} alternating trials`);
    const targets = new Targets();
    for (const [index, row] of rows.entries()) {
      const [before, after] = figures[index] as readonly [number[], number[]];
      const ratios = pairedRatios(after, before);
      console.log(
        `${row.name.padEnd(58)} baseline ${summary(before, 0).padEnd(28)} current ${summary(after, 0).padEnd(28)} current/baseline ${summary(ratios)}x`,
      );
      // Unchanged or faster: the current median is at least the baseline's slowest trial.
      targets.holds(
        row.name,
        `${summary(ratios)}x (current ${median(after).toFixed(0)}, baseline slowest ${Math.min(...before).toFixed(0)} per CPU second)`,
        median(after) >= Math.min(...before),
        "current median >= baseline's slowest trial",
      );
    }
    targets.print("hot path against the baseline");
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
    for (const server of servers) await server.stop();
  }
}
