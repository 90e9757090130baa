import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DecisionMetrics } from "../src/enforcer/decision-metrics";
import { RecentRejections } from "../src/enforcer/recent-rejections";
import { MetricsFlusher } from "../src/enforcer/reporters";
import { ManualTimers } from "../src/limiter/timers";
import { enforcerRedisNames } from "../src/publication/redis-keys";
import {
  REJECTION_TALLY_KEPT,
  readRejectionTally,
  rejectionTallyKey,
} from "../src/publication/rejection-tally";
import { readyRedis } from "./support/redis";

/*
 * The customers' recent-rejection lists a gateway flushes for the console, on the real Redis:
 * newest first, trimmed, expiring, for many customers at once (several script calls and turns of
 * the event loop), and the set of rejected customers beside them.
 */

const KEEP = 50;
const TTL_MS = 60_000;

describe("MetricsFlusher rejection lists", () => {
  let redis: Redis;
  const prefix = `${inject("redisKeyPrefix")}rejections:`;
  const names = enforcerRedisNames(prefix);
  const wall = new ManualTimers(Date.parse("2026-12-01T12:00:00.000Z"));
  const rejections = new RecentRejections({ wallClock: wall, clock: wall, maxPending: 100_000 });
  let flusher: MetricsFlusher;

  beforeAll(async () => {
    redis = await readyRedis("control");
    flusher = new MetricsFlusher({
      redis,
      names,
      prefix,
      enforcerId: 'gw-"1"',
      metrics: new DecisionMetrics({ wallClock: wall }),
      recentRejections: rejections,
      secondBucketTtlMs: TTL_MS,
      minuteBucketTtlMs: TTL_MS,
      rejectionsPerCustomer: KEEP,
      rejectionsTtlMs: TTL_MS,
      logger: { log() {} },
    });
  });

  afterAll(async () => {
    await redis.quit();
  });

  const listOf = async (customerId: string) =>
    (await redis.lrange(names.rejections(customerId), 0, -1)).map(
      (entry) => JSON.parse(entry) as Record<string, unknown>,
    );

  it("keeps the newest rejectionsPerCustomer, newest first, with an expiry, across flushes", async () => {
    for (let i = 0; i < 120; i++) {
      wall.advance(1);
      rejections.record(
        "acme",
        i % 2 === 0 ? "tier:pro" : "ceiling",
        i % 3 === 0 ? null : "search",
      );
    }
    await flusher.flush();
    let list = await listOf("acme");
    expect(list).toHaveLength(KEEP);
    const times = list.map((entry) => entry.atMs as number);
    expect(times).toEqual([...times].sort((a, b) => b - a));
    expect(times[0]).toBe(wall.nowMs());
    expect(list[0]).toEqual({
      atMs: wall.nowMs(),
      firstAtMs: wall.nowMs(),
      count: 1,
      scope: "ceiling",
      endpointClass: "search",
      enforcerId: 'gw-"1"',
    });
    expect(list.some((entry) => entry.endpointClass === null)).toBe(true);
    expect(await redis.pttl(names.rejections("acme"))).toBeGreaterThan(TTL_MS - 10_000);

    wall.advance(1_000);
    rejections.record("acme", "tier:pro", "reports");
    await flusher.flush();
    list = await listOf("acme");
    expect(list).toHaveLength(KEEP);
    expect(list[0]).toMatchObject({ atMs: wall.nowMs(), endpointClass: "reports" });
    expect(list[1]?.atMs).toBe(times[0]);
  });

  it("a list Redis refuses to write loses the flush, counted, while the loop goes on (no unhandled rejection)", async () => {
    // A string where the first chunk's list should be: that script call fails while the flush is
    // still building later chunks across turns of the event loop.
    await redis.set(names.rejections("wrong-type"), "not a list");
    rejections.record("wrong-type", "tier:free", null);
    const customers = Array.from({ length: 120 }, (_, i) => `after-${i}`);
    for (const customerId of customers) rejections.record(customerId, "tier:free", null);
    const lost = flusher.lostFlushCount;
    await flusher.flush();
    expect(flusher.lostFlushCount).toBe(lost + 1);
    // The other chunks were written all the same.
    expect(await redis.llen(names.rejections("after-119"))).toBe(1);
  });

  it("writes every rejected customer's list when hundreds are rejected in one flush", async () => {
    const customers = Array.from({ length: 237 }, (_, i) => `many-${i}`);
    for (let round = 0; round < 3; round++) {
      for (const customerId of customers) {
        wall.advance(1);
        rejections.record(customerId, "tier:free", null);
      }
    }
    await flusher.flush();
    // Each customer's three rejections, by one limit within a second: one entry counting three.
    const lists = await Promise.all(customers.map((customerId) => listOf(customerId)));
    expect(lists.map((list) => list.map((entry) => entry.count))).toEqual(customers.map(() => [3]));
    const listed = await redis.zrange(names.rejectedCustomers, "0", "-1");
    expect(listed).toEqual(expect.arrayContaining(customers));
    // The newest rejection's time is each customer's score.
    expect(Number(await redis.zscore(names.rejectedCustomers, "many-236"))).toBe(wall.nowMs());
  });

  it("tallies each customer's rejections per minute and limit, exactly, across flushes", async () => {
    // Start of a fresh minute, so every rejection below falls in it.
    wall.advance(60_000 - (wall.nowMs() % 60_000));
    const minute = Math.floor(wall.nowMs() / 60_000);
    for (let i = 0; i < 30; i++) {
      wall.advance(100);
      rejections.record("tally-a", "tier:free", null);
      if (i % 3 === 0) rejections.record("tally-b", "ceiling", "search");
    }
    await flusher.flush();
    // A second flush adds into the same minute (ZINCRBY), never replaces.
    rejections.record("tally-a", "customer:tally-a", null);
    rejections.record("tally-a", "tier:free", null);
    await flusher.flush();
    const tally = await readRejectionTally(redis, prefix, minute, minute);
    expect(tally).toEqual([
      { epochMinute: minute, customerId: "tally-a", scope: "tier:free", count: 31 },
      { epochMinute: minute, customerId: "tally-b", scope: "ceiling", count: 10 },
      { epochMinute: minute, customerId: "tally-a", scope: "customer:tally-a", count: 1 },
    ]);
    expect(await redis.pttl(rejectionTallyKey(prefix, minute))).toBeGreaterThan(TTL_MS - 10_000);
  });

  it("keeps at most REJECTION_TALLY_KEPT members a minute: the largest counts", async () => {
    wall.advance(60_000 - (wall.nowMs() % 60_000));
    const minute = Math.floor(wall.nowMs() / 60_000);
    // Two rejections each for the heavy ones (within a second: one entry, count 2), one for the rest.
    for (let i = 0; i < REJECTION_TALLY_KEPT + 200; i++) {
      rejections.record(`wide-${i}`, "tier:free", null);
      if (i < 10) rejections.record(`wide-${i}`, "tier:free", null);
    }
    await flusher.flush();
    const key = rejectionTallyKey(prefix, minute);
    expect(await redis.zcard(key)).toBe(REJECTION_TALLY_KEPT);
    const top = await readRejectionTally(redis, prefix, minute, minute, 10);
    expect(top.map((entry) => entry.count)).toEqual(Array.from({ length: 10 }, () => 2));
  });

  it("reads past members that are not a customer id and a scope, and counts that are not whole", async () => {
    const minute = 1;
    const key = rejectionTallyKey(prefix, minute);
    await redis.zadd(
      key,
      5,
      "ok|tier:free",
      4,
      "no-scope",
      3,
      "a b|tier:free",
      2,
      "ok|",
      1.5,
      "x|y",
    );
    expect(await readRejectionTally(redis, prefix, minute, minute)).toEqual([
      { epochMinute: minute, customerId: "ok", scope: "tier:free", count: 5 },
    ]);
  });
});
