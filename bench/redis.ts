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
 * Competitors in their best documented configuration: rate-limiter-flexible on an ioredis client
 * with `enableAutoPipelining` (its defaults shown for reference), three layers as its
 * `RateLimiterUnion` of one limiter per check; @upstash/ratelimit unpatched (its script as
 * published, over ioredis instead of HTTP), or left out with the reason printed when Redis refuses
 * the unpatched script.
 *
 * Figures: decisions/s and latency percentiles are medians over alternating trials (the machine is
 * small and shared, so read orders of magnitude and ratios). Redis server time is the growth of
 * the scripts' usec in `INFO commandstats` (`scriptStats`: fcall + evalsha + eval) during a
 * side's trial, divided by its decisions. The suite
 * runs on a redis-server of its own, so nothing else is counted. Printed beside it for information:
 * the server process's on-CPU time per decision (`/proc/<pid>/schedstat`), which a loaded host's
 * scheduler does not stretch. Bytes per key: `MEMORY USAGE` of
 * sampled keys (key name included, so prefixes count too). Exactness, in the same run: bursts on
 * fresh keys whose limits do not refill during the check; every side must admit at most the limit.
 *
 * `BENCH_REDIS_URL` points the suite at another Redis (default: a private redis-server).
 */

import { existsSync, readFileSync } from "node:fs";
import type { LimitCheck } from "@limitplane/enforcer/limiter";
import { RedisStore } from "@limitplane/enforcer/limiter";
import { redisOptionsFor } from "@limitplane/enforcer/publication";
import { deleteKeysUnder } from "@limitplane/enforcer/testing";
import { Ratelimit } from "@upstash/ratelimit";
import type { Requester, UpstashRequest, UpstashResponse } from "@upstash/redis";
import { Redis as UpstashRedis } from "@upstash/redis";
import { Redis } from "ioredis";
import { RateLimiterRedis } from "rate-limiter-flexible";
import { loadEnv } from "@/lib/server/env";
import { createRedis } from "@/lib/server/redis";
import { benchRedis, describeRedis, loadLine, pairedRatios, scriptStats, summary } from "./fair";
import {
  ONE_LIMIT,
  rlfLimiters as rlfLimitersOf,
  type Shape,
  THREE_LAYERS,
} from "./redis-workload";
import { Targets } from "./results";

const SUBJECTS = 10_000;
const CONCURRENCY = [1, 16, 64] as const;
const TRIALS = 7;
const TRIAL_MS = 500;
const WARMUP_MS = 500;
/** Decisions per script call for the batching store (see RedisStore's maxBatchSize). */
const BATCH = 64;
const MEMORY_SAMPLES = 300;

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
  /**
   * Decisions that threw (a command timeout when the loaded host stalls the server or the client
   * past the 250 ms command timeout), counted and printed rather than ending the run.
   */
  readonly failed: number;
  /** Redis server microseconds per decision in this trial (fcall + evalsha + eval). */
  serverUs: number;
  /** The redis-server process's on-CPU microseconds per decision in this trial; NaN if unknown. */
  serverCpuUs: number;
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
  let failed = 0;
  const startNs = process.hrtime.bigint();
  const endNs = startNs + BigInt(durationMs) * 1_000_000n;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      for (;;) {
        const beforeNs = process.hrtime.bigint();
        if (beforeNs >= endNs) return;
        try {
          if (await side.decide(randomSubject())) admitted++;
        } catch (error: unknown) {
          failed++;
          if (failed === 1) console.error(`${side.name}: a decision failed: ${String(error)}`);
        }
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
    failed,
    serverUs: Number.NaN,
    serverCpuUs: Number.NaN,
  };
}

/**
 * The bench's own redis-server's on-CPU time so far, in ns (Linux `/proc/<pid>/schedstat`), or
 * undefined for a Redis the bench did not start. Unlike `INFO commandstats` usec (wall time
 * inside a command), it does not grow when the scheduler takes the CPU away mid-command, which
 * on a loaded host happens more to long script calls than to short ones; it also counts what
 * the server spends outside commands (reading requests, writing replies).
 */
async function serverCpuReader(admin: Redis, isOwn: boolean): Promise<(() => number) | undefined> {
  if (!isOwn) return undefined;
  const pid = /^process_id:(\d+)/m.exec(await admin.info("server"))?.[1];
  const path = `/proc/${pid}/schedstat`;
  if (pid === undefined || !existsSync(path)) return undefined;
  return () => Number(readFileSync(path, "utf8").split(" ")[0]);
}

/**
 * An @upstash/redis requester that sends each command over an ioredis connection instead of
 * HTTP, so @upstash/ratelimit runs against a plain Redis. Commands and scripts go through
 * untouched: the library runs exactly as published.
 */
function ioredisRequester(client: Redis): Requester {
  return {
    request: async <TResult>(request: UpstashRequest): Promise<UpstashResponse<TResult>> => {
      if (!Array.isArray(request.body)) throw new Error("expected a command array");
      const [name, ...rest] = request.body.map((part: unknown) => String(part));
      if (name === undefined) throw new Error("empty command");
      try {
        // The requester contract is generic in the result, as upstash's own HTTP client is.
        return { result: (await client.call(name, ...rest)) as TResult };
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
async function bytesPerKey(
  admin: Redis,
  side: Side,
  keyOf: (subject: string) => string,
  tag = "m",
) {
  const fresh = Array.from({ length: MEMORY_SAMPLES }, (_, i) => `${tag}:${i}`);
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

/** Fresh keys per side in the exactness check, and requests sent to each at once. */
const EXACT_KEYS = 200;
const EXACT_LIMIT = 10;
const EXACT_SENT = 30;

/**
 * In the same run, on fresh keys: `EXACT_SENT` decisions per key at once (64 in flight in all,
 * batched for ours), for a limit of `EXACT_LIMIT` that does not refill during the check. Returns
 * the most any key admitted.
 */
async function mostAdmitted(decide: (subject: string) => Promise<boolean>, tag: string) {
  const admitted = new Map<string, number>();
  const queue: string[] = [];
  for (let round = 0; round < EXACT_SENT; round++) {
    for (let key = 0; key < EXACT_KEYS; key++) queue.push(`x:${tag}:${key}`);
  }
  let next = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < queue.length) {
        const subject = queue[next++] ?? "";
        if (await decide(subject)) admitted.set(subject, (admitted.get(subject) ?? 0) + 1);
      }
    }),
  );
  return Math.max(0, ...admitted.values());
}

export async function run(): Promise<void> {
  const loadAtStart = loadLine("at start");
  const server = await benchRedis();
  const url = server.url;
  const runPrefix = `${loadEnv().REDIS_KEY_PREFIX}bench:${Date.now().toString(36)}_${process.pid}:`;
  const connection = () => readyClient(createRedis("decisions", { url }));
  const pipelinedConnection = () =>
    readyClient(new Redis(url, { ...redisOptionsFor("decisions"), enableAutoPipelining: true }));
  const admin = await readyClient(createRedis("control", { url }));
  const clients: Redis[] = [admin];
  const own = async (client: Promise<Redis> = connection()) => {
    const ready = await client;
    clients.push(ready);
    return ready;
  };

  try {
    const version = /redis_version:(\S+)/.exec(await admin.info("server"))?.[1] ?? "?";
    const serverCpuNs = await serverCpuReader(admin, server.isOwn);

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

    // rate-limiter-flexible at its best: ioredis autopipelining; three layers as its union of one
    // limiter per check. A rejection is a rejected promise; an Error is a failure.
    const rlfPrefix = `${runPrefix}rlf`;
    const consumed = async (promise: Promise<unknown>): Promise<boolean> => {
      try {
        await promise;
        return true;
      } catch (rejection: unknown) {
        if (rejection instanceof Error) throw rejection;
        return false;
      }
    };
    const rlfLimiters = (client: Redis) => rlfLimitersOf(client, rlfPrefix);
    const rlfClient = await own(pipelinedConnection());
    const rlf = rlfLimiters(rlfClient);
    const rlfDefaults = rlfLimiters(await own());

    // @upstash/ratelimit through ioredis, unpatched; left out when Redis refuses its script.
    const upstashPrefix = `${runPrefix}upstash`;
    const upstashClient = await own();
    const upstashLimiter = (limiter: Ratelimit["limiter"], name: string) =>
      new Ratelimit({
        redis: new UpstashRedis(ioredisRequester(upstashClient)),
        limiter,
        prefix: `${upstashPrefix}:${name}`,
      });
    let upstashVerdict: string;
    try {
      await upstashLimiter(Ratelimit.tokenBucket(50, "1 s", 100), "probe").limit("c:0");
      upstashVerdict = "runs unmodified";
    } catch (error: unknown) {
      upstashVerdict = `left out: it cannot run unmodified on Redis ${version} (${error instanceof Error ? error.message : String(error)}); it is not patched to make it run`;
    }
    const hasUpstash = upstashVerdict === "runs unmodified";
    const upstashAccount = upstashLimiter(Ratelimit.tokenBucket(50, "1 s", 100), "account");
    const upstashCeiling = upstashLimiter(Ratelimit.fixedWindow(10_000, "60 s"), "ceiling");
    const upstashSearch = upstashLimiter(Ratelimit.slidingWindow(6_000, "60 s"), "search");

    const oursOne = oursSide(batching, "ours", "one");
    const oursThree = oursSide(batching, "ours", "three");
    const RLF = "rate-limiter-flexible";
    const rlfOne: Side = {
      name: RLF,
      shape: "one",
      decide: (s) => consumed(rlf.account.consume(s)),
    };
    const upstashOne: Side = {
      name: "upstash",
      shape: "one",
      decide: async (s) => (await upstashAccount.limit(s)).success,
    };
    const sides: Side[] = [
      oursOne,
      rlfOne,
      ...(hasUpstash ? [upstashOne] : []),
      oursSide(unbatched, "ours, unbatched", "one", true),
      {
        name: `${RLF}, its defaults (no autopipelining)`,
        shape: "one",
        isReference: true,
        decide: (s) => consumed(rlfDefaults.account.consume(s)),
      },
      oursThree,
      {
        name: `${RLF} (union)`,
        shape: "three",
        decide: (s) => consumed(rlf.union.consume(s)),
      },
      ...(hasUpstash
        ? [
            {
              name: "upstash x3",
              shape: "three" as const,
              decide: async (s: string) => {
                const results = await Promise.all([
                  upstashCeiling.limit(s),
                  upstashAccount.limit(s),
                  upstashSearch.limit(s),
                ]);
                return results.every((result) => result.success);
              },
            },
          ]
        : []),
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
          const cpuBeforeNs = serverCpuNs?.() ?? Number.NaN;
          const result = await drive(cell.side, inFlight, TRIAL_MS);
          const cpuAfterNs = serverCpuNs?.() ?? Number.NaN;
          const after = await scriptStats(admin);
          result.serverUs = (after.usec - before.usec) / result.decisions;
          result.serverCpuUs = (cpuAfterNs - cpuBeforeNs) / 1_000 / result.decisions;
          cell.trials.push(result);
          cell.serverUsec += after.usec - before.usec;
          cell.scriptCalls += after.calls - before.calls;
        }
      }
      cells.push(...row);
    }

    // Exactness, same run: a fixed window of EXACT_LIMIT per hour on fresh keys, for every side.
    const exactWindow: LimitCheck = {
      scope: "exact",
      bucket: "exact",
      limit: { algorithm: "fixed-window", limit: EXACT_LIMIT, windowMs: 3_600_000 },
      mode: "enforce",
    };
    const exactBucket: LimitCheck = {
      scope: "exact-bucket",
      bucket: "exact-bucket",
      limit: { algorithm: "token-bucket", capacity: EXACT_LIMIT, refillPerSec: 1 / 86_400 },
      mode: "enforce",
    };
    const rlfExact = new RateLimiterRedis({
      storeClient: rlfClient,
      keyPrefix: `${rlfPrefix}:exact`,
      points: EXACT_LIMIT,
      duration: 3_600,
    });
    const exactness = [
      [
        "ours (batched), fixed window",
        await mostAdmitted(
          async (s) => (await batching.decide({ subject: s, checks: [exactWindow] })).allowed,
          "ow",
        ),
      ],
      [
        "ours (batched), three layers with a token bucket",
        await mostAdmitted(
          async (s) =>
            (await batching.decide({ subject: s, checks: [...THREE_LAYERS, exactBucket] })).allowed,
          "ot",
        ),
      ],
      [RLF, await mostAdmitted((s) => consumed(rlfExact.consume(s)), "rlf")],
    ] as const;

    const bytes = {
      oursOne: await bytesPerKey(admin, oursOne, (s) => batching.subjectKey(s)),
      oursThree: await bytesPerKey(admin, oursThree, (s) => batching.subjectKey(s), "m3"),
      rlf: await bytesPerKey(admin, rlfOne, (s) => `${rlfPrefix}:account:${s}`),
      upstash: hasUpstash
        ? await bytesPerKey(admin, upstashOne, (s) => `${upstashPrefix}:account:${s}`)
        : Number.NaN,
    };

    report(cells, {
      version,
      upstashVerdict,
      bytes,
      loadAtStart,
      redis: describeRedis(server),
      exactness,
    });
  } finally {
    await deleteKeysUnder(admin, runPrefix);
    for (const client of clients) client.disconnect();
    await server.stop();
  }
}

interface Summary {
  readonly perSecond: number;
  readonly p50Us: number;
  readonly p99Us: number;
  readonly serverUsPerDecision: number;
  readonly serverCpuUsPerDecision: number;
  readonly callsPerDecision: number;
  readonly failed: number;
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
    serverCpuUsPerDecision: median(cell.trials.map((trial) => trial.serverCpuUs)),
    failed: cell.trials.reduce((sum, trial) => sum + trial.failed, 0),
    callsPerDecision: cell.scriptCalls / decisions,
    admittedShare: admitted / decisions,
  };
}

function report(
  cells: readonly Cell[],
  context: {
    version: string;
    upstashVerdict: string;
    bytes: { oursOne: number; oursThree: number; rlf: number; upstash: number };
    loadAtStart: string;
    redis: string;
    exactness: readonly (readonly [string, number])[];
  },
): void {
  const find = (name: string, shape: Shape, inFlight: number) =>
    cells.find((c) => c.side.name === name && c.side.shape === shape && c.inFlight === inFlight);
  console.log(
    `node ${process.version}, Redis ${context.version}: ${context.redis}; ${SUBJECTS.toLocaleString("en-US")} subjects at random; median of ${TRIALS} alternating ${TRIAL_MS / 1000} s trials per cell; ours batches up to ${BATCH} decisions per script call, rate-limiter-flexible runs on ioredis with enableAutoPipelining`,
  );
  console.log(context.loadAtStart);
  console.log(loadLine("at end"));
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
          formatNumber(s.serverCpuUsPerDecision),
          s.callsPerDecision.toFixed(2),
          `${(s.admittedShare * 100).toFixed(1)}%${s.failed > 0 ? ` (${s.failed} failed)` : ""}`,
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
        "server on-CPU us/decision",
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
      ["ours, three layers (the subject's one hash)", formatNumber(context.bytes.oursThree), ""],
      [
        "rate-limiter-flexible (counter)",
        formatNumber(context.bytes.rlf),
        `${(context.bytes.rlf / context.bytes.oursOne).toFixed(2)}x`,
      ],
      [
        "upstash (token bucket hash)",
        formatNumber(context.bytes.upstash),
        Number.isNaN(context.bytes.upstash)
          ? "(left out)"
          : `${(context.bytes.upstash / context.bytes.oursOne).toFixed(2)}x`,
      ],
    ],
  );

  const targets = new Targets();
  const trialsOf = (cell: Cell | undefined, figure: (trial: Trial) => number) =>
    cell === undefined ? [] : cell.trials.map(figure);
  const ours64 = find("ours", "one", 64);
  const rlf64 = find("rate-limiter-flexible", "one", 64);
  targets.atLeast(
    "Redis store, one node, 64 in flight, 10k keys: ours / rlf decisions/s",
    pairedRatios(
      trialsOf(ours64, (t) => t.perSecond),
      trialsOf(rlf64, (t) => t.perSecond),
    ),
    2,
  );
  for (const inFlight of CONCURRENCY) {
    targets.atMost(
      `Redis server us/decision, one limit, ${inFlight} in flight: ours / rlf`,
      pairedRatios(
        trialsOf(find("ours", "one", inFlight), (t) => t.serverUs),
        trialsOf(find("rate-limiter-flexible", "one", inFlight), (t) => t.serverUs),
      ),
      1,
    );
    targets.atMost(
      `Redis server us/decision, three layers, ${inFlight} in flight: ours / rlf (union)`,
      pairedRatios(
        trialsOf(find("ours", "three", inFlight), (t) => t.serverUs),
        trialsOf(find("rate-limiter-flexible (union)", "three", inFlight), (t) => t.serverUs),
      ),
      1.5,
    );
  }
  targets.atLeast(
    "three layers at 64 in flight: ours three / ours one decisions/s",
    pairedRatios(
      trialsOf(find("ours", "three", 64), (t) => t.perSecond),
      trialsOf(ours64, (t) => t.perSecond),
    ),
    0.7,
  );
  for (const [name, most] of context.exactness) {
    targets.holds(
      `exactness, ${name}: most admitted on one key (${EXACT_SENT} sent at once per key, ${EXACT_KEYS} keys)`,
      String(most),
      most <= EXACT_LIMIT,
      `<= ${EXACT_LIMIT}`,
    );
  }
  const lowestAdmitted = Math.min(...cells.map((cell) => summarise(cell).admittedShare));
  targets.holds(
    "workload: every cell admits at least 90% (so caching denials is not what is measured)",
    `${(lowestAdmitted * 100).toFixed(1)}% lowest`,
    lowestAdmitted >= 0.9,
    ">= 90%",
  );
  targets.print("Redis suite targets");
  console.log(
    `Redis on-CPU us/decision, ours / rlf, the whole redis-server process (info; not stretched by the scheduler): ${CONCURRENCY.map(
      (inFlight) =>
        `${inFlight} in flight: one limit ${summary(
          pairedRatios(
            trialsOf(find("ours", "one", inFlight), (t) => t.serverCpuUs),
            trialsOf(find("rate-limiter-flexible", "one", inFlight), (t) => t.serverCpuUs),
          ),
        )}x, three layers ${summary(
          pairedRatios(
            trialsOf(find("ours", "three", inFlight), (t) => t.serverCpuUs),
            trialsOf(
              find("rate-limiter-flexible (union)", "three", inFlight),
              (t) => t.serverCpuUs,
            ),
          ),
        )}x`,
    ).join("; ")}`,
  );
  console.log(
    `three layers vs one, p50 at each concurrency (info): ${CONCURRENCY.map(
      (inFlight) =>
        `${inFlight}: ${summary(
          pairedRatios(
            trialsOf(find("ours", "three", inFlight), (t) => t.p50Us),
            trialsOf(find("ours", "one", inFlight), (t) => t.p50Us),
          ),
        )}x`,
    ).join(", ")}`,
  );
}
