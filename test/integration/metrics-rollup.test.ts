/**
 * The worker's metrics rollup: what enforcers flushed to Redis per minute becomes `MetricMinute`
 * rows in Postgres, repeating it changes nothing, a late flush updates the row, and rows past the
 * retention go.
 */

import { createEnforcer, type Enforcer, type EnforcerLogger } from "@limitplane/enforcer";
import { ManualClock, MemoryStore } from "@limitplane/enforcer/limiter";
import { publishTestSnapshot } from "@limitplane/enforcer/testing";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { rollUpMetricMinutes } from "@/lib/control/metric-minute/roll-up-metric-minutes";
import { filePrefix, waitFor } from "./helpers/gateway-processes";
import { snapshotVersion } from "./helpers/snapshots";
import { provideTestDatabase } from "./helpers/test-database";

const silentLogger: EnforcerLogger = { log() {} };

const database = provideTestDatabase();
const redisUrl = inject("redisUrl");
let redis: Redis;
const running: Enforcer[] = [];

const MINUTE_MS = 60_000;
/** A whole minute, ten minutes ago: the enforcer's wall clock sits 10 s into it. */
const MINUTE = Math.floor(Date.now() / MINUTE_MS) - 10;
/** The rollup's clock: that minute has ended and settled. */
const AFTER_MS = (MINUTE + 1) * MINUTE_MS + 6_000;

beforeAll(() => {
  redis = new Redis(redisUrl);
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((enforcer) => enforcer.stop()));
});

afterAll(() => {
  redis.disconnect();
});

async function enforcerAt(prefix: string): Promise<Enforcer> {
  const enforcer = await createEnforcer({
    expectedGateways: 1,
    redis: { url: redisUrl, keyPrefix: prefix },
    store: () => new MemoryStore(),
    local: false,
    reporting: { metricsFlushIntervalMs: 50 },
    time: { wallClock: new ManualClock(MINUTE * MINUTE_MS + 10_000) },
    logger: silentLogger,
  });
  running.push(enforcer);
  return enforcer;
}

async function decide(enforcer: Enforcer, count: number, customerId: string): Promise<void> {
  for (let i = 0; i < count; i++) {
    await enforcer.check({ customerId, tier: "free", method: "GET", path: "/v1/things" });
  }
}

async function flushed(prefix: string, decisions: number): Promise<void> {
  await waitFor(`${decisions} decisions in the minute hash`, async () => {
    const count = await redis.hget(`${prefix}metrics:min:${MINUTE}`, "@latency|count");
    return count === String(decisions) ? true : undefined;
  });
}

async function rows() {
  return database.current().db.metricMinute.findMany({
    where: { minute: new Date(MINUTE * MINUTE_MS) },
    orderBy: { scope: "asc" },
    select: { scope: true, allowed: true, rejected: true, wouldReject: true, degraded: true },
  });
}

describe("rolling the enforcers' counts up into Postgres", () => {
  it("writes one row per scope and minute, the same rows again when repeated, and a late flush's totals", async () => {
    const prefix = filePrefix("ru");
    await publishTestSnapshot(redis, prefix, snapshotVersion(1));
    const first = await enforcerAt(prefix);
    const second = await enforcerAt(prefix);
    // Two enforcers add into the same minute: 22 and 3 requests of one free customer each.
    await decide(first, 22, "initech");
    await decide(second, 3, "globex");
    await flushed(prefix, 25);

    const deps = {
      db: database.current().db,
      redis,
      prefix,
      clock: { nowMs: () => AFTER_MS },
    };
    const result = await rollUpMetricMinutes(deps, {
      retentionDays: 30,
      readThroughMinute: MINUTE - 1,
    });
    expect(result).toMatchObject({ readThroughMinute: MINUTE, rowsDeleted: 0, hasMore: false });
    const expected = [
      { scope: "candidate:free-halved", allowed: 13, rejected: 0, wouldReject: 12, degraded: 0 },
      { scope: "ceiling", allowed: 23, rejected: 0, wouldReject: 0, degraded: 0 },
      { scope: "tier:free", allowed: 23, rejected: 2, wouldReject: 0, degraded: 0 },
    ];
    expect(await rows()).toEqual(expected);

    // Repeated by a new worker (which starts from the newest row): the same rows, not doubled.
    await rollUpMetricMinutes(deps, { retentionDays: 30, readThroughMinute: null });
    expect(await rows()).toEqual(expected);

    // A late flush into that minute, read again within the lookback: the row takes the new totals.
    await decide(second, 1, "globex");
    await flushed(prefix, 26);
    await rollUpMetricMinutes(deps, {
      retentionDays: 30,
      readThroughMinute: result.readThroughMinute,
    });
    expect((await rows()).find((row) => row.scope === "tier:free")).toMatchObject({
      allowed: 24,
    });
  });

  it("deletes rows older than the retention, and only those", async () => {
    const db = database.current().db;
    const nowMs = Date.now();
    const old = new Date(Math.floor((nowMs - 31 * 86_400_000) / MINUTE_MS) * MINUTE_MS);
    const kept = new Date(Math.floor((nowMs - 29 * 86_400_000) / MINUTE_MS) * MINUTE_MS);
    await db.metricMinute.createMany({
      data: [
        { scope: "retention:old", minute: old, allowed: 1 },
        { scope: "retention:kept", minute: kept, allowed: 1 },
      ],
    });
    const result = await rollUpMetricMinutes(
      { db, redis, prefix: filePrefix("rr"), clock: { nowMs: () => nowMs } },
      { retentionDays: 30, readThroughMinute: null },
    );
    expect(result.rowsDeleted).toBeGreaterThanOrEqual(1);
    const left = await db.metricMinute.findMany({
      where: { scope: { startsWith: "retention:" } },
      select: { scope: true },
    });
    expect(left).toEqual([{ scope: "retention:kept" }]);
  });
});
