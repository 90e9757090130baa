/**
 * Redis suite: RedisStore against rate-limiter-flexible's RateLimiterRedis and @upstash/ratelimit,
 * side by side in one process, on the same Redis, one after another (never at the same time).
 *
 * Workload: 10k subjects picked at random, limits roomy enough that at least 90% of decisions are
 * admitted (the admitted share is printed, so caching denials cannot be what is measured). Each
 * side runs at 1, 16 and 64 requests in flight, for one limit and for a three-layer decision
 * (ceiling + account + endpoint). Every side gets its own connection with the same options
 * (`createRedis("decisions")`: 250 ms command timeout, no offline queue) and its own key prefix
 * under this run's prefix, deleted at the end.
 *
 * Figures: decisions/s and latency percentiles are medians over alternating trials (the machine is
 * small and shared, so read orders of magnitude and ratios). Redis server time is the growth of
 * `INFO commandstats` usec of evalsha + eval during a side's trials, divided by its decisions; on
 * a Redis other programs also use, it includes their scripts. Bytes per key: `MEMORY USAGE` of
 * sampled keys (key name included, so prefixes count too).
 *
 * `BENCH_REDIS_URL` points the suite at another Redis (default: REDIS_URL, i.e. 6379).
 */
import { createHash } from "node:crypto";
import { availableParallelism, loadavg } from "node:os";
import type { LimitCheck } from "@limitplane/enforcer/limiter";
import { RedisStore } from "@limitplane/enforcer/limiter";
import { redisOptionsFor } from "@limitplane/enforcer/publication";
import { Ratelimit } from "@upstash/ratelimit";
import type { Requester, UpstashRequest, UpstashResponse } from "@upstash/redis";
import { Redis as UpstashRedis } from "@upstash/redis";
import { Redis } from "ioredis";
import { RateLimiterRedis, RateLimiterUnion } from "rate-limiter-flexible";
import { loadEnv } from "@/lib/server/env";
import { createRedis } from "@/lib/server/redis";

const SUBJECTS = 10_000;
const CONCURRENCY = [1, 16, 64] as const;
const TRIALS = 7;
const TRIAL_MS = 500;
const WARMUP_MS = 500;
/** Decisions per script call for the batching store (see RedisStore's maxBatchSize). */
const BATCH = 64;
const MEMORY_SAMPLES = 300;

/** One limit: a token bucket of 100, refilled at 50/s; the workload gives a subject ~10/s. */
const ONE_LIMIT: readonly LimitCheck[] = [
  {
    scope: "tier:pro",
    bucket: "account",
    limit: { algorithm: "token-bucket", capacity: 100, refillPerSec: 50 },
    mode: "enforce",
  },
];

/** Three layers, one call: a global ceiling, the account's bucket, an endpoint class. */
const THREE_LAYERS: readonly LimitCheck[] = [
  {
    scope: "ceiling",
    bucket: "ceiling",
    limit: { algorithm: "fixed-window", limit: 10_000, windowMs: 60_000 },
    mode: "enforce",
  },
  ...ONE_LIMIT,
  {
    scope: "tier:pro/endpoint:search",
    bucket: "endpoint:search",
    limit: { algorithm: "sliding-window", limit: 6_000, windowMs: 60_000 },
    mode: "enforce",
  },
];

type Shape = "one" | "three";

/** One contestant: makes one decision for `subject` and says whether it was admitted. */
interface Side {
  readonly name: string;
  readonly shape: Shape;
  /** Shown in the table but not used for an aim. */
  readonly isReference?: boolean;
  decide(subject: string): Promise<boolean>;
}

interface Trial {
  readonly perSecond: number;
  readonly p50Us: number;
  readonly p99Us: number;
  readonly decisions: number;
  readonly admitted: number;
}

interface Cell {
  readonly side: Side;
  readonly inFlight: number;
  readonly trials: Trial[];
  serverUsec: number;
  scriptCalls: number;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

function percentile(sorted: Float64Array, fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? Number.NaN;
}

const subjects = Array.from({ length: SUBJECTS }, (_, i) => `c:${i}`);
const randomSubject = () => subjects[Math.floor(Math.random() * SUBJECTS)] ?? "c:0";

/** `inFlight` loops, each awaiting one decision after another, for `durationMs`. */
async function drive(side: Side, inFlight: number, durationMs: number): Promise<Trial> {
  const latenciesUs: number[] = [];
  let admitted = 0;
  const startNs = process.hrtime.bigint();
  const endNs = startNs + BigInt(durationMs) * 1_000_000n;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      for (;;) {
        const beforeNs = process.hrtime.bigint();
        if (beforeNs >= endNs) return;
        if (await side.decide(randomSubject())) admitted++;
        latenciesUs.push(Number(process.hrtime.bigint() - beforeNs) / 1_000);
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - startNs) / 1e9;
  const sorted = Float64Array.from(latenciesUs).sort();
  return {
    perSecond: latenciesUs.length / seconds,
    p50Us: percentile(sorted, 0.5),
    p99Us: percentile(sorted, 0.99),
    decisions: latenciesUs.length,
    admitted,
  };
}

/** evalsha + eval calls and microseconds so far, from INFO commandstats. */
async function scriptStats(admin: Redis): Promise<{ calls: number; usec: number }> {
  const info = await admin.info("commandstats");
  let calls = 0;
  let usec = 0;
  for (const match of info.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+),usec=(\d+)/gm)) {
    calls += Number(match[1]);
    usec += Number(match[2]);
  }
  return { calls, usec };
}

/**
 * An @upstash/redis requester that sends each command over an ioredis connection instead of
 * HTTP, so @upstash/ratelimit runs against a plain Redis. With `isPatched`, it removes the
 * `#!lua flags=...` line Redis 7.0 rejects (`allow-key-locking` needs Redis 7.2 or later) and
 * keeps using EVALSHA under the patched script's SHA; otherwise scripts go through untouched.
 */
function ioredisRequester(client: Redis, isPatched: boolean): Requester {
  const patchedShas = new Map<string, string>();
  const send = async (command: readonly unknown[]): Promise<unknown> => {
    const [name, ...rest] = command.map((part) => String(part));
    if (name === undefined) throw new Error("empty command");
    if (isPatched && name === "evalsha" && rest[0] !== undefined) {
      rest[0] = patchedShas.get(rest[0]) ?? rest[0];
    }
    if (isPatched && name === "eval" && rest[0]?.startsWith("#!lua") === true) {
      const original = rest[0];
      const patched = original.slice(original.indexOf("\n") + 1);
      patchedShas.set(
        createHash("sha1").update(original).digest("hex"),
        createHash("sha1").update(patched).digest("hex"),
      );
      rest[0] = patched;
    }
    return client.call(name, ...rest);
  };
  return {
    request: async <TResult>(request: UpstashRequest): Promise<UpstashResponse<TResult>> => {
      if (!Array.isArray(request.body)) throw new Error("expected a command array");
      try {
        // The requester contract is generic in the result, as upstash's own HTTP client is.
        return { result: (await send(request.body)) as TResult };
      } catch (error: unknown) {
        return { error: error instanceof Error ? error.message : String(error) };
      }
    },
  };
}

/**
 * Mean MEMORY USAGE of the keys `side` writes for fresh subjects, measured right after writing
 * them (the competitors' keys for a 1 s limit expire a second later).
 */
async function bytesPerKey(admin: Redis, side: Side, keyOf: (subject: string) => string) {
  const fresh = Array.from({ length: MEMORY_SAMPLES }, (_, i) => `m:${i}`);
  await Promise.all(fresh.map((subject) => side.decide(subject)));
  let total = 0;
  let found = 0;
  for (const subject of fresh) {
    const usage = await admin.call("MEMORY", "USAGE", keyOf(subject), "SAMPLES", "0");
    if (typeof usage !== "number") continue;
    total += usage;
    found++;
  }
  return found === 0 ? Number.NaN : total / found;
}

async function deleteUnder(admin: Redis, prefix: string): Promise<void> {
  let cursor = "0";
  do {
    const [next, keys] = await admin.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
    cursor = next;
    if (keys.length > 0) await admin.unlink(...keys);
  } while (cursor !== "0");
}

function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return "-";
  if (value >= 100) return Math.round(value).toLocaleString("en-US");
  return value.toFixed(value >= 10 ? 1 : 2);
}

function printTable(header: readonly string[], body: readonly (readonly string[])[]): void {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...body.map((cells) => (cells[column] ?? "").length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join("  ")
      .trimEnd();
  console.log(line(header));
  console.log(line(widths.map((width) => "-".repeat(width))));
  for (const cells of body) console.log(line(cells));
}

async function readyClient(client: Redis): Promise<Redis> {
  if (client.status !== "ready") {
    await new Promise<void>((resolve, reject) => {
      client.once("ready", () => resolve());
      client.once("end", () => reject(new Error("Redis connection ended")));
    });
  }
  return client;
}

export async function run(): Promise<void> {
  const loadAtStart = loadPerCore();
  const url = process.env.BENCH_REDIS_URL ?? loadEnv().REDIS_URL;
  const runPrefix = `${loadEnv().REDIS_KEY_PREFIX}bench:${Date.now().toString(36)}_${process.pid}:`;
  const connection = () => readyClient(createRedis("decisions", { url }));
  const admin = await readyClient(createRedis("control", { url }));
  const clients: Redis[] = [admin];
  const own = async () => {
    const client = await connection();
    clients.push(client);
    return client;
  };

  try {
    const version = /redis_version:(\S+)/.exec(await admin.info("server"))?.[1] ?? "?";

    // Ours: one script call per decision, batched under load, and unbatched for reference.
    const oursPrefix = `${runPrefix}ours:`;
    const batching = new RedisStore({
      client: await own(),
      keyPrefix: oursPrefix,
      maxBatchSize: BATCH,
    });
    const unbatched = new RedisStore({ client: await own(), keyPrefix: oursPrefix });
    const oursSide = (store: RedisStore, name: string, shape: Shape, isReference = false): Side => {
      const checks = shape === "one" ? ONE_LIMIT : THREE_LAYERS;
      return {
        name,
        shape,
        isReference,
        decide: async (subject) => (await store.decide({ subject, checks })).allowed,
      };
    };

    // rate-limiter-flexible: its fixed-window counter per limit; three layers as its union.
    const rlfPrefix = `${runPrefix}rlf`;
    const consumed = (promise: Promise<unknown>) =>
      promise.then(
        () => true,
        (rejection: unknown) => {
          if (rejection instanceof Error) throw rejection;
          return false;
        },
      );
    const rlfClient = await own();
    const rlfAccount = new RateLimiterRedis({
      storeClient: rlfClient,
      keyPrefix: `${rlfPrefix}:account`,
      points: 100,
      duration: 1,
    });
    const rlfUnion = new RateLimiterUnion(
      new RateLimiterRedis({
        storeClient: rlfClient,
        keyPrefix: `${rlfPrefix}:ceiling`,
        points: 10_000,
        duration: 60,
      }),
      rlfAccount,
      new RateLimiterRedis({
        storeClient: rlfClient,
        keyPrefix: `${rlfPrefix}:search`,
        points: 6_000,
        duration: 60,
      }),
    );
    // The same limiter on a connection with ioredis autopipelining, which it does not use by
    // default: shown for reference, so the comparison is not only with its defaults.
    const rlfPipelinedClient = await readyClient(
      new Redis(url, { ...redisOptionsFor("decisions"), enableAutoPipelining: true }),
    );
    clients.push(rlfPipelinedClient);
    const rlfPipelined = new RateLimiterRedis({
      storeClient: rlfPipelinedClient,
      keyPrefix: `${rlfPrefix}:account`,
      points: 100,
      duration: 1,
    });

    // @upstash/ratelimit through ioredis: first as published, then with the flags line removed.
    const upstashPrefix = `${runPrefix}upstash`;
    const upstashClient = await own();
    const upstashLimiter = (isPatched: boolean, limiter: Ratelimit["limiter"], name: string) =>
      new Ratelimit({
        redis: new UpstashRedis(ioredisRequester(upstashClient, isPatched)),
        limiter,
        prefix: `${upstashPrefix}:${name}`,
      });
    let upstashVerdict: string;
    try {
      await upstashLimiter(false, Ratelimit.tokenBucket(50, "1 s", 100), "probe").limit("c:0");
      upstashVerdict = "runs unmodified";
    } catch (error: unknown) {
      upstashVerdict = `CANNOT RUN unmodified on Redis ${version}: ${error instanceof Error ? error.message : String(error)}`;
    }
    const isUpstashPatched = upstashVerdict !== "runs unmodified";
    const upstashAccount = upstashLimiter(
      isUpstashPatched,
      Ratelimit.tokenBucket(50, "1 s", 100),
      "account",
    );
    const upstashCeiling = upstashLimiter(
      isUpstashPatched,
      Ratelimit.fixedWindow(10_000, "60 s"),
      "ceiling",
    );
    const upstashSearch = upstashLimiter(
      isUpstashPatched,
      Ratelimit.slidingWindow(6_000, "60 s"),
      "search",
    );
    const upstashName = isUpstashPatched ? "upstash (flags line removed)" : "upstash";

    const oursOne = oursSide(batching, "ours", "one");
    const oursThree = oursSide(batching, "ours", "three");
    const rlfOne: Side = {
      name: "rate-limiter-flexible",
      shape: "one",
      decide: (s) => consumed(rlfAccount.consume(s)),
    };
    const upstashOne: Side = {
      name: upstashName,
      shape: "one",
      decide: async (s) => (await upstashAccount.limit(s)).success,
    };
    const sides: Side[] = [
      oursOne,
      rlfOne,
      upstashOne,
      oursSide(unbatched, "ours, unbatched", "one", true),
      {
        name: "rate-limiter-flexible, autopipelined",
        shape: "one",
        isReference: true,
        decide: (s) => consumed(rlfPipelined.consume(s)),
      },
      oursThree,
      {
        name: "rate-limiter-flexible (union)",
        shape: "three",
        decide: (s) => consumed(rlfUnion.consume(s)),
      },
      {
        name: `${upstashName} x3`,
        shape: "three",
        decide: async (s) => {
          const results = await Promise.all([
            upstashCeiling.limit(s),
            upstashAccount.limit(s),
            upstashSearch.limit(s),
          ]);
          return results.every((result) => result.success);
        },
      },
      oursSide(unbatched, "ours, unbatched", "three", true),
    ];

    for (const side of sides) await drive(side, 16, WARMUP_MS);

    const cells: Cell[] = [];
    for (const inFlight of CONCURRENCY) {
      const row = sides.map(
        (side): Cell => ({ side, inFlight, trials: [], serverUsec: 0, scriptCalls: 0 }),
      );
      for (let trial = 0; trial < TRIALS; trial++) {
        for (const cell of row) {
          const before = await scriptStats(admin);
          cell.trials.push(await drive(cell.side, inFlight, TRIAL_MS));
          const after = await scriptStats(admin);
          cell.serverUsec += after.usec - before.usec;
          cell.scriptCalls += after.calls - before.calls;
        }
      }
      cells.push(...row);
    }

    const bytes = {
      oursOne: await bytesPerKey(admin, oursOne, (s) => `${oursPrefix}rl:{${s}}:account`),
      oursThree: await bytesPerKey(admin, oursThree, (s) => `${oursPrefix}rl:{${s}}:ceiling`),
      rlf: await bytesPerKey(admin, rlfOne, (s) => `${rlfPrefix}:account:${s}`),
      upstash: await bytesPerKey(admin, upstashOne, (s) => `${upstashPrefix}:account:${s}`),
    };

    report(cells, { version, upstashVerdict, bytes, loadAtStart });
  } finally {
    await deleteUnder(admin, runPrefix);
    for (const client of clients) client.disconnect();
  }
}

interface Summary {
  readonly perSecond: number;
  readonly p50Us: number;
  readonly p99Us: number;
  readonly serverUsPerDecision: number;
  readonly callsPerDecision: number;
  readonly admittedShare: number;
}

function summarise(cell: Cell): Summary {
  const decisions = cell.trials.reduce((sum, trial) => sum + trial.decisions, 0);
  const admitted = cell.trials.reduce((sum, trial) => sum + trial.admitted, 0);
  return {
    perSecond: median(cell.trials.map((trial) => trial.perSecond)),
    p50Us: median(cell.trials.map((trial) => trial.p50Us)),
    p99Us: median(cell.trials.map((trial) => trial.p99Us)),
    serverUsPerDecision: cell.serverUsec / decisions,
    callsPerDecision: cell.scriptCalls / decisions,
    admittedShare: admitted / decisions,
  };
}

/** Median over trials of `a`'s figure over `b`'s in the same trial round. */
function pairedRatio(a: Cell, b: Cell, figure: (trial: Trial) => number): number {
  return median(
    a.trials.map((trial, i) => {
      const other = b.trials[i];
      return other === undefined ? Number.NaN : figure(trial) / figure(other);
    }),
  );
}

/** The machine's 1-minute load average over its cores: above 1, other work competed for CPU. */
function loadPerCore(): string {
  return ((loadavg()[0] ?? 0) / availableParallelism()).toFixed(2);
}

function report(
  cells: readonly Cell[],
  context: {
    version: string;
    upstashVerdict: string;
    bytes: { oursOne: number; oursThree: number; rlf: number; upstash: number };
    loadAtStart: string;
  },
): void {
  const find = (name: string, shape: Shape, inFlight: number) =>
    cells.find((c) => c.side.name === name && c.side.shape === shape && c.inFlight === inFlight);
  console.log(
    `node ${process.version}, Redis ${context.version}; ${SUBJECTS.toLocaleString("en-US")} subjects at random; median of ${TRIALS} alternating ${TRIAL_MS / 1000} s trials per cell; ours batches up to ${BATCH} decisions per script call`,
  );
  console.log(
    `load average per core: ${context.loadAtStart} at start, ${loadPerCore()} at end (${availableParallelism()} cores; above 1, other processes competed for the CPU and every figure is inflated)`,
  );
  console.log(`@upstash/ratelimit 2.2: ${context.upstashVerdict}`);

  for (const shape of ["one", "three"] as const) {
    console.log(
      shape === "one"
        ? "\nOne limit (token bucket; rate-limiter-flexible: its fixed-window counter)"
        : "\nThree layers: ceiling (fixed window) + account (token bucket) + endpoint (sliding window)",
    );
    const body: string[][] = [];
    for (const inFlight of CONCURRENCY) {
      const ours = find("ours", shape, inFlight);
      const oursSummary = ours === undefined ? undefined : summarise(ours);
      for (const cell of cells.filter((c) => c.side.shape === shape && c.inFlight === inFlight)) {
        const s = summarise(cell);
        const isOurs = cell.side.name === "ours";
        body.push([
          String(inFlight),
          cell.side.name,
          formatNumber(s.perSecond),
          formatNumber(s.p50Us),
          formatNumber(s.p99Us),
          formatNumber(s.serverUsPerDecision),
          s.callsPerDecision.toFixed(2),
          `${(s.admittedShare * 100).toFixed(1)}%`,
          isOurs || oursSummary === undefined
            ? ""
            : `${(oursSummary.perSecond / s.perSecond).toFixed(2)}x`,
          isOurs || oursSummary === undefined ? "" : `${(oursSummary.p50Us / s.p50Us).toFixed(2)}x`,
        ]);
      }
    }
    printTable(
      [
        "in flight",
        "side",
        "decisions/s",
        "p50 us",
        "p99 us",
        "server us/decision",
        "script calls/decision",
        "admitted",
        "ours/theirs rate",
        "ours/theirs p50",
      ],
      body,
    );
  }

  console.log("\nBytes per key (MEMORY USAGE, sampled)");
  printTable(
    ["keys", "bytes/key", "ratio to ours (one limit)"],
    [
      ["ours, one limit (token bucket)", formatNumber(context.bytes.oursOne), "1.00x"],
      ["ours, ceiling key (fixed window)", formatNumber(context.bytes.oursThree), ""],
      [
        "rate-limiter-flexible (counter)",
        formatNumber(context.bytes.rlf),
        `${(context.bytes.rlf / context.bytes.oursOne).toFixed(2)}x`,
      ],
      [
        "upstash (token bucket hash)",
        formatNumber(context.bytes.upstash),
        `${(context.bytes.upstash / context.bytes.oursOne).toFixed(2)}x`,
      ],
    ],
  );

  console.log(
    "\nAims (verdicts on the median of per-trial ratios; trials of two sides ran back to back)",
  );
  const aims: string[][] = [];
  const ours64 = find("ours", "one", 64);
  const rlf64 = find("rate-limiter-flexible", "one", 64);
  if (ours64 !== undefined && rlf64 !== undefined) {
    const ratio = pairedRatio(ours64, rlf64, (trial) => trial.perSecond);
    const perTrial = ours64.trials
      .map((trial, i) => trial.perSecond / (rlf64.trials[i]?.perSecond ?? Number.NaN))
      .sort((a, b) => a - b);
    aims.push([
      "one limit, 64 in flight: >= 1.5x rate-limiter-flexible's decisions/s",
      `${ratio.toFixed(2)}x (trials ${perTrial.map((r) => r.toFixed(2)).join(" ")})`,
      ratio >= 1.5 ? "PASS" : "SHORT",
    ]);
  }
  for (const inFlight of CONCURRENCY) {
    const one = find("ours", "one", inFlight);
    const three = find("ours", "three", inFlight);
    if (one === undefined || three === undefined) continue;
    const ratio = pairedRatio(three, one, (trial) => trial.p50Us);
    aims.push([
      `three layers within 1.5x the p50 latency of one limit, ${inFlight} in flight`,
      `${ratio.toFixed(2)}x`,
      ratio <= 1.5 ? "PASS" : "SHORT",
    ]);
  }
  const lowestAdmitted = Math.min(...cells.map((cell) => summarise(cell).admittedShare));
  aims.push([
    "workload: every cell admits at least 90% of decisions",
    `${(lowestAdmitted * 100).toFixed(1)}% lowest`,
    lowestAdmitted >= 0.9 ? "PASS" : "SHORT",
  ]);
  printTable(["aim", "measured", ""], aims);
  console.log(
    "At 16 and 64 in flight each side runs a closed loop at the capacity of Redis (or its client), so p50 there is roughly in-flight / throughput: it grows with the server work per decision (three keys read and written instead of one), not with round trips.",
  );
}
