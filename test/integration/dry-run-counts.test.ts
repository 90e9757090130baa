/**
 * The dry-run page's counts: rolled-up history from Postgres joined with the live minutes still in
 * Redis, Redis winning for a minute in both, and history alone when Redis cannot be read.
 */

import { enforcerRedisNames, scopeField } from "@limitplane/enforcer/publication";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { readScopeCounts } from "@/lib/control/dry-run/read-scope-counts";
import { unreachableRedis } from "../support/redis";
import { filePrefix } from "./helpers/gateway-processes";
import { provideTestDatabase } from "./helpers/test-database";

const database = provideTestDatabase();
let redis: Redis;

const MINUTE_MS = 60_000;
const NOW_MINUTE = Math.floor(Date.now() / MINUTE_MS);
const NOW_MS = NOW_MINUTE * MINUTE_MS + 30_000;

beforeAll(() => {
  redis = new Redis(inject("redisUrl"));
});

afterAll(() => {
  redis.disconnect();
});

async function storeMinute(scope: string, minute: number, counts: Record<string, number>) {
  await database.current().db.metricMinute.create({
    data: { scope, minute: new Date(minute * MINUTE_MS), ...counts },
  });
}

async function liveMinute(
  prefix: string,
  scope: string,
  minute: number,
  counts: Record<string, number>,
) {
  const key = enforcerRedisNames(prefix).metricsMinute(minute);
  for (const [field, value] of Object.entries(counts)) {
    await redis.hset(key, scopeField(scope, field as "allowed"), String(value));
  }
  await redis.expire(key, 600);
}

describe("readScopeCounts", () => {
  it("joins stored history with the live minutes, Redis winning where both have a minute", async () => {
    const prefix = filePrefix("drc");
    const candidate = `candidate:c-${prefix.length}-${Math.random().toString(36).slice(2, 8)}`;
    const tier = `tier:t${Math.random().toString(36).slice(2, 8)}`;
    await storeMinute(candidate, NOW_MINUTE - 10, { allowed: 5, wouldReject: 2 });
    await storeMinute(candidate, NOW_MINUTE - 1, { allowed: 1, wouldReject: 1 });
    await storeMinute(tier, NOW_MINUTE - 10, { allowed: 7, rejected: 1 });
    await liveMinute(prefix, candidate, NOW_MINUTE - 1, { allowed: 4, wouldReject: 9 });
    await liveMinute(prefix, candidate, NOW_MINUTE, { allowed: 2, wouldReject: 3 });
    await liveMinute(prefix, "tier:other", NOW_MINUTE, { allowed: 100 });

    const { rows, isLive } = await readScopeCounts(
      {
        scopes: [candidate, tier],
        fromMs: (NOW_MINUTE - 15) * MINUTE_MS,
        toMs: (NOW_MINUTE + 1) * MINUTE_MS,
        nowMs: NOW_MS,
      },
      { db: database.current().db, redis, prefix },
    );
    expect(isLive).toBe(true);
    expect(rows).toEqual([
      {
        scope: candidate,
        minuteStartMs: (NOW_MINUTE - 10) * MINUTE_MS,
        allowed: 5,
        rejected: 0,
        wouldReject: 2,
      },
      {
        scope: tier,
        minuteStartMs: (NOW_MINUTE - 10) * MINUTE_MS,
        allowed: 7,
        rejected: 1,
        wouldReject: 0,
      },
      {
        scope: candidate,
        minuteStartMs: (NOW_MINUTE - 1) * MINUTE_MS,
        allowed: 4,
        rejected: 0,
        wouldReject: 9,
      },
      {
        scope: candidate,
        minuteStartMs: NOW_MINUTE * MINUTE_MS,
        allowed: 2,
        rejected: 0,
        wouldReject: 3,
      },
    ]);
  });

  it("without Redis, the history alone, marked not live", async () => {
    const scope = `candidate:h${Math.random().toString(36).slice(2, 8)}`;
    await storeMinute(scope, NOW_MINUTE - 2, { allowed: 3, wouldReject: 1 });
    const down = await unreachableRedis();
    const { rows, isLive } = await readScopeCounts(
      {
        scopes: [scope],
        fromMs: (NOW_MINUTE - 15) * MINUTE_MS,
        toMs: (NOW_MINUTE + 1) * MINUTE_MS,
        nowMs: NOW_MS,
      },
      { db: database.current().db, redis: down, prefix: "unused:" },
    ).finally(() => down.disconnect());
    expect(isLive).toBe(false);
    expect(rows.map((row) => row.wouldReject)).toEqual([1]);
  });
});
