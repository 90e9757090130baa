/**
 * What the overview reads besides the audit log, against the real Postgres and Redis: per-minute
 * counts (stored rows, with the newest minutes from the enforcers' Redis buckets replacing them)
 * and the enforcer fleet from heartbeats, with each enforcer's lag behind the published version.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { listEnforcers } from "@/lib/control/fleet/list-enforcers";
import { loadScopeMinutes } from "@/lib/control/metric-minute/load-scope-minutes";
import { systemClock } from "@/lib/server/composition";
import { filePrefix } from "./helpers/gateway-processes";
import { provideTestDatabase } from "./helpers/test-database";

const database = provideTestDatabase();
let redis: Redis;
const MINUTE_MS = 60_000;

beforeAll(() => {
  redis = new Redis(inject("redisUrl"));
});

afterAll(() => {
  redis.disconnect();
});

describe("per-minute counts for charts and alerts", () => {
  it("take the newest minutes from Redis when it has them, the stored rows otherwise", async () => {
    const prefix = filePrefix("ov");
    const nowMs = Math.floor(Date.now() / MINUTE_MS) * MINUTE_MS + 30_000;
    const minute = (back: number) => Math.floor(nowMs / MINUTE_MS) - back;
    // Stored: five minutes ago (rolled up long since) and one minute ago (rolled up early, before
    // a late flush). Redis: one minute ago (with the late flush) and the current minute.
    await database.current().db.metricMinute.createMany({
      data: [
        { scope: "tier:free", minute: new Date(minute(5) * MINUTE_MS), allowed: 50, rejected: 5 },
        { scope: "tier:free", minute: new Date(minute(1) * MINUTE_MS), allowed: 10, rejected: 1 },
      ],
    });
    await redis.hset(`${prefix}metrics:min:${minute(1)}`, {
      "tier:free|allowed": "12",
      "tier:free|rejected": "3",
      "@latency|count": "15",
    });
    await redis.hset(`${prefix}metrics:min:${minute(0)}`, {
      "tier:free|allowed": "4",
      "tier:pro|rejected": "2",
    });
    try {
      const live = await loadScopeMinutes(
        { fromMs: nowMs - 10 * MINUTE_MS, nowMs },
        { db: database.current().db, live: { redis, prefix } },
      );
      expect(live.hasLiveMinutes).toBe(true);
      expect(
        live.rows.map((row) => [
          (row.minuteStartMs - nowMs + 30_000) / MINUTE_MS,
          row.scope,
          row.allowed,
          row.rejected,
        ]),
      ).toEqual([
        [-5, "tier:free", 50, 5],
        [-1, "tier:free", 12, 3],
        [0, "tier:free", 4, 0],
        [0, "tier:pro", 0, 2],
      ]);

      const stored = await loadScopeMinutes(
        { fromMs: nowMs - 10 * MINUTE_MS, nowMs },
        { db: database.current().db, live: null },
      );
      expect(stored.hasLiveMinutes).toBe(false);
      expect(stored.rows.map((row) => [row.allowed, row.rejected])).toEqual([
        [50, 5],
        [10, 1],
      ]);
    } finally {
      await redis.del(`${prefix}metrics:min:${minute(1)}`, `${prefix}metrics:min:${minute(0)}`);
    }
  });
});

describe("the enforcer fleet", () => {
  it("lists live heartbeats, newest first, each with its lag behind the published version", async () => {
    const prefix = filePrefix("fl");
    const nowMs = Date.now();
    const publishedAtMs = nowMs - 20_000;
    const beat = async (id: string, fields: Record<string, string>, atMs: number) => {
      await redis.hset(`${prefix}enforcer:${id}`, {
        id,
        host: "gw-host",
        heartbeatAt: String(atMs),
        ...fields,
      });
      await redis.zadd(`${prefix}enforcers`, atMs, id);
    };
    await redis.hset(`${prefix}{policy}:head`, {
      version: "7",
      publishedAt: String(publishedAtMs),
    });
    await beat(
      "current",
      { version: "7", appliedAt: String(publishedAtMs + 40), pid: "11" },
      nowMs - 500,
    );
    await beat("behind", { version: "5", appliedAt: String(nowMs - 60_000) }, nowMs - 900);
    await beat("starting", { version: "" }, nowMs - 100);
    // In the set, but its hash expired: it stopped beating.
    await redis.zadd(`${prefix}enforcers`, nowMs - 30_000, "gone");
    try {
      const fleet = await listEnforcers({ redis, prefix, clock: { nowMs: () => nowMs } });
      expect(fleet.published).toEqual({ version: 7, publishedAtMs });
      expect(
        fleet.enforcers.map((enforcer) => [
          enforcer.id,
          enforcer.version,
          enforcer.versionsBehind,
          enforcer.lagMs,
        ]),
      ).toEqual([
        ["starting", null, null, null],
        ["current", 7, 0, 40],
        ["behind", 5, 2, 20_000],
      ]);
      expect(fleet.enforcers[1]).toMatchObject({ host: "gw-host", pid: 11 });
    } finally {
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length > 0) await redis.del(...keys);
    }
  });

  it("is empty, with nothing published, before any gateway has started", async () => {
    const fleet = await listEnforcers({ redis, prefix: filePrefix("em"), clock: systemClock });
    expect(fleet).toEqual({ published: null, enforcers: [] });
  });
});
