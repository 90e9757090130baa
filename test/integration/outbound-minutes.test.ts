/**
 * An outbound budget's per-minute figures from the limiters to Postgres: a worker process killed
 * with SIGKILL while holding every slot, two limiters making an exact number of calls that wait
 * for those slots to lapse, one wait ended by `maxWaitMs` and one aborted; after the roll-up the
 * minute's row has exactly those calls, waits, the slots freed by TTL and the peak in flight.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import path from "node:path";
import { createInterface } from "node:readline";
import {
  createOutboundLimiter,
  OutboundError,
  type OutboundLimiter,
} from "@limitplane/enforcer/callers";
import { ManualClock } from "@limitplane/enforcer/limiter";
import type { TOutboundBudgetInput } from "@limitplane/enforcer/policy";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { chartWindow } from "@/lib/console/chart-series";
import { buildOutboundSeries } from "@/lib/console/outbound-series";
import { rollUpMetricMinutes } from "@/lib/control/metric-minute/roll-up-metric-minutes";
import { listOutboundMinutes } from "@/lib/control/outbound-minute/list-outbound-minutes";
import { filePrefix } from "./helpers/gateway-processes";
import { provideTestDatabase } from "./helpers/test-database";

const HOLDER_PATH = path.resolve(import.meta.dirname, "helpers/outbound-holder.ts");
const database = provideTestDatabase();
const redisUrl = inject("redisUrl");

const MINUTE_MS = 60_000;
/** A whole minute, ten minutes ago: every limiter's wall clock sits 10 s into it. */
const MINUTE = Math.floor(Date.now() / MINUTE_MS) - 10;
const WALL_MS = MINUTE * MINUTE_MS + 10_000;
/** The roll-up's clock: that minute has ended and settled. */
const AFTER_MS = (MINUTE + 1) * MINUTE_MS + 6_000;

const SLOTS = 3;
const CALLS_PER_LIMITER = 10;
const BUDGET: TOutboundBudgetInput = {
  name: `mins${Math.floor(Math.random() * 1e6)}`,
  limit: { algorithm: "token-bucket", capacity: 5, refillPerSec: 50 },
  concurrency: { max: SLOTS, slotTtlMs: 1_500 },
  maxWaitMs: 20_000,
};
const SCOPE = `outbound:${BUDGET.name}`;

let redis: Redis;
const children: ChildProcess[] = [];
const limiters: OutboundLimiter[] = [];

beforeAll(() => {
  redis = new Redis(redisUrl);
});

afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  for (const limiter of limiters) limiter.close();
  await redis.quit();
});

/** A worker process holding `slots` slots of the budget, once it says so. */
async function startHolder(prefix: string, slots: number): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      HOLDER_PATH,
      redisUrl,
      prefix,
      JSON.stringify(BUDGET),
      String(slots),
      String(WALL_MS),
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  children.push(child);
  const lines = createInterface({ input: child.stdout ?? process.stdin });
  const exited = once(child, "exit").then(([code]) => {
    throw new Error(`the holder exited with ${String(code)} before holding its slots`);
  });
  const holding = (async () => {
    for await (const line of lines) if (line === "holding") return;
    throw new Error("the holder closed its output before holding its slots");
  })();
  await Promise.race([holding, exited]);
  exited.catch(() => undefined);
  return child;
}

function limiterAt(prefix: string): OutboundLimiter {
  const limiter = createOutboundLimiter({
    client: redis,
    keyPrefix: prefix,
    budgets: [BUDGET],
    metrics: { wallClock: new ManualClock(WALL_MS), flushIntervalMs: 60_000 },
  });
  limiters.push(limiter);
  return limiter;
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return "granted";
  } catch (error: unknown) {
    if (error instanceof OutboundError) return error.code;
    throw error;
  }
}

describe("an outbound budget's minutes", () => {
  it("counts the calls, the waits and exactly the slots a killed worker left to their TTL", async () => {
    const prefix = filePrefix("obm");
    const holder = await startHolder(prefix, SLOTS);
    const [first, second] = [limiterAt(prefix), limiterAt(prefix)];

    // Every slot is held: a caller that will not wait hits maxWaitMs, and one aborts its wait.
    expect(await codeOf(first.acquire(SCOPE, { maxWaitMs: 0 }))).toBe("max-wait");
    const controller = new AbortController();
    const aborted = codeOf(second.acquire(SCOPE, { signal: controller.signal }));
    controller.abort();
    expect(await aborted).toBe("aborted");

    holder.kill("SIGKILL");
    await once(holder, "exit");
    // Each call waits for a slot: the first ones until the killed holder's slots lapse.
    const call = async () => "done";
    const results = await Promise.all(
      [first, second].flatMap((limiter) =>
        Array.from({ length: CALLS_PER_LIMITER }, () => limiter.schedule(SCOPE, "", call)),
      ),
    );
    expect(results).toHaveLength(2 * CALLS_PER_LIMITER);
    await Promise.all([first.flush(), second.flush()]);

    const result = await rollUpMetricMinutes(
      { db: database.current().db, redis, prefix, clock: { nowMs: () => AFTER_MS } },
      { retentionDays: 30, readThroughMinute: MINUTE - 1 },
    );
    expect(result).toMatchObject({ readThroughMinute: MINUTE, outboundRowsWritten: 1 });

    const rows = await listOutboundMinutes(
      { name: BUDGET.name, fromMs: MINUTE * MINUTE_MS, toMs: (MINUTE + 1) * MINUTE_MS },
      { db: database.current().db },
    );
    const calls = SLOTS + 2 * CALLS_PER_LIMITER;
    expect(rows).toHaveLength(1);
    const [row] = rows;
    expect(row).toMatchObject({
      scope: SCOPE,
      minuteStartMs: MINUTE * MINUTE_MS,
      calls,
      waitMaxed: 1,
      waitAborted: 1,
      ttlFreed: SLOTS,
      peakInFlight: SLOTS,
    });
    // Every granted call's wait is in the histogram, once.
    expect(row?.waitBuckets.reduce((sum, count) => sum + count, 0)).toBe(calls);
    // The Lua's own total agrees: the killed holder's slots, each reaped once.
    expect(Number(await redis.hget(`${prefix}ob:{o:${BUDGET.name}:}:x`, "expired"))).toBe(SLOTS);

    // The panel's numbers for the minute.
    const series = buildOutboundSeries(
      rows,
      chartWindow({ rangeMs: MINUTE_MS, bucketMs: MINUTE_MS }, { nowMs: AFTER_MS }),
    );
    expect(series.totals).toMatchObject({ calls, waitMaxed: 1, waitAborted: 1, ttlFreed: SLOTS });

    // A second roll-up of the same minute writes the same row, not twice the counts.
    await rollUpMetricMinutes(
      { db: database.current().db, redis, prefix, clock: { nowMs: () => AFTER_MS } },
      { retentionDays: 30, readThroughMinute: MINUTE - 1 },
    );
    expect(
      await listOutboundMinutes(
        { name: BUDGET.name, fromMs: MINUTE * MINUTE_MS, toMs: (MINUTE + 1) * MINUTE_MS },
        { db: database.current().db },
      ),
    ).toEqual(rows);
  });
});
