/**
 * The enforcer runtime against the real Redis, in process: following the published policy
 * (announcements, healing by polling, last good kept, never backwards), startup without Redis,
 * heartbeats, and the metrics and rejections it writes for the console.
 */

import {
  createEnforcer,
  type Enforcer,
  type EnforcerLogger,
  type EnforcerOptions,
} from "@limitplane/enforcer";
import { ManualClock, MemoryStore } from "@limitplane/enforcer/limiter";
import {
  policyRedisNames,
  REDIS_PROTOCOL_VERSION,
  RedisProtocolError,
} from "@limitplane/enforcer/publication";
import { publishTestSnapshot } from "@limitplane/enforcer/testing";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { filePrefix, freePort, privateRedis, waitFor } from "./helpers/gateway-processes";
import { flipMiddleByte, publishWhole, snapshotVersion } from "./helpers/snapshots";

const redisUrl = inject("redisUrl");
let redis: Redis;
const running: Enforcer[] = [];

beforeAll(() => {
  redis = new Redis(redisUrl);
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((enforcer) => enforcer.stop()));
});

afterAll(() => {
  redis.disconnect();
});

interface LogLine {
  readonly level: Parameters<EnforcerLogger["log"]>[0];
  readonly message: string;
  readonly fields: Readonly<Record<string, unknown>>;
}

async function start(
  prefix: string,
  options: Partial<EnforcerOptions> = {},
): Promise<{ enforcer: Enforcer; logs: LogLine[] }> {
  const logs: LogLine[] = [];
  const enforcer = await createEnforcer({
    expectedGateways: 1,
    store: () => new MemoryStore(),
    logger: { log: (level, message, fields = {}) => logs.push({ level, message, fields }) },
    ...options,
    redis: { url: redisUrl, keyPrefix: prefix, ...options.redis },
    controlPlane: { pollIntervalMs: 100, ...options.controlPlane },
    reporting: { heartbeatIntervalMs: 100, metricsFlushIntervalMs: 100, ...options.reporting },
  });
  running.push(enforcer);
  return { enforcer, logs };
}

const version = (enforcer: Enforcer) => enforcer.status().policy?.version ?? null;
const untilVersion = (enforcer: Enforcer, expected: number) =>
  waitFor(`version ${expected}`, () => (version(enforcer) === expected ? true : undefined));

describe("following the published policy", () => {
  it("applies the snapshot current at start, then every announced newer version", async () => {
    const prefix = filePrefix("pf");
    await publishTestSnapshot(redis, prefix, snapshotVersion(1));
    const { enforcer } = await start(prefix, { controlPlane: { pollIntervalMs: 60_000 } });
    expect(enforcer.status()).toMatchObject({ isReady: true, policy: { version: 1 } });
    await publishTestSnapshot(redis, prefix, snapshotVersion(2));
    await untilVersion(enforcer, 2);
    expect(enforcer.status().policy?.trigger).toBe("announcement");
  });

  it("heals a missed announcement by polling the stored version", async () => {
    const prefix = filePrefix("pm");
    await publishTestSnapshot(redis, prefix, snapshotVersion(1));
    const { enforcer } = await start(prefix);
    await publishWhole(redis, prefix, snapshotVersion(2), { channel: `${prefix}nobody-listens` });
    await untilVersion(enforcer, 2);
    expect(enforcer.status().policy?.trigger).toBe("poll");
  });

  it("never goes back to an older version, whatever Redis holds", async () => {
    const prefix = filePrefix("po");
    await publishTestSnapshot(redis, prefix, snapshotVersion(5));
    const { enforcer } = await start(prefix);
    // The head says 3 (a restored backup, a confused publisher): announced, polled, never applied.
    await redis.hset(policyRedisNames(prefix).head, "version", "3");
    await redis.publish(`${prefix}policy:announce`, JSON.stringify({ version: 3 }));
    await enforcer.refreshPolicy();
    expect(version(enforcer)).toBe(5);
    expect(enforcer.status().snapshotErrors.count).toBe(0);
  });

  it("refuses a malformed snapshot: keeps the last good, counts it once, reports and logs it once", async () => {
    const prefix = filePrefix("pb");
    await publishTestSnapshot(redis, prefix, snapshotVersion(1));
    const { enforcer, logs } = await start(prefix);
    // Version 2 with one byte changed after it was encoded: its digest no longer matches.
    await publishWhole(redis, prefix, snapshotVersion(2), { damage: flipMiddleByte });
    const errors = await waitFor("the refusal", () => {
      const report = enforcer.status().snapshotErrors;
      return report.count > 0 ? report : undefined;
    });
    expect(errors).toMatchObject({ count: 1, lastVersion: 2 });
    expect(errors.lastMessage).toBe(
      "snapshot.digest: the SHA-256 of the bytes does not match the trailer: damaged in transit or storage",
    );
    expect(version(enforcer)).toBe(1);
    // Polls keep seeing it: still counted and logged once.
    await enforcer.refreshPolicy();
    await enforcer.refreshPolicy();
    expect(enforcer.status().snapshotErrors.count).toBe(1);
    expect(logs.filter((line) => line.message.includes("refused"))).toHaveLength(1);
    const heartbeat = await waitFor("the heartbeat to report it", async () => {
      const hash = await redis.hgetall(`${prefix}enforcer:${enforcer.enforcerId}`);
      return hash.snapshotErrors === "1" ? hash : undefined;
    });
    expect(heartbeat).toMatchObject({ version: "1", lastSnapshotErrorVersion: "2" });
    expect(heartbeat.lastSnapshotError).toMatch(/SHA-256/);

    // A head that does not parse, under a newer version: refused too, counted as a second error.
    await redis.hset(policyRedisNames(prefix).head, "version", "3", "checksum", "not hex");
    await redis.publish(`${prefix}policy:announce`, "{}");
    await waitFor("the second refusal", () =>
      enforcer.status().snapshotErrors.count === 2 ? true : undefined,
    );
    expect(version(enforcer)).toBe(1);
    // A good newer version is applied again.
    await publishTestSnapshot(redis, prefix, snapshotVersion(4));
    await untilVersion(enforcer, 4);
  });
});

describe("the Redis protocol version", () => {
  it("an enforcer refuses to start against another protocol's policy, naming both versions", async () => {
    const prefix = filePrefix("pv");
    await publishTestSnapshot(redis, prefix, snapshotVersion(1));
    await redis.hset(policyRedisNames(prefix).head, "format", String(REDIS_PROTOCOL_VERSION - 1));
    const started = start(prefix);
    await expect(started).rejects.toThrow(RedisProtocolError);
    await expect(started).rejects.toThrow(
      `Redis protocol mismatch under key prefix "${prefix}": Redis holds protocol version ${REDIS_PROTOCOL_VERSION - 1}, this enforcer speaks version ${REDIS_PROTOCOL_VERSION}: upgrade the control plane (its worker republishes the policy in the new version when it starts), or run this enforcer from the control plane's release`,
    );
  });

  it("a publisher replaces an older protocol's policy and never touches a newer one's", async () => {
    const prefix = filePrefix("pp");
    const head = policyRedisNames(prefix).head;
    await publishTestSnapshot(redis, prefix, snapshotVersion(5));
    await redis.hset(head, "format", String(REDIS_PROTOCOL_VERSION - 1));
    // Same version, older protocol: replaced whole.
    await publishTestSnapshot(redis, prefix, snapshotVersion(5));
    expect(await redis.hget(head, "format")).toBe(String(REDIS_PROTOCOL_VERSION));
    const { enforcer } = await start(prefix);
    expect(version(enforcer)).toBe(5);
    await redis.hset(head, "format", String(REDIS_PROTOCOL_VERSION + 1));
    await expect(publishTestSnapshot(redis, prefix, snapshotVersion(6))).rejects.toThrow(
      `Redis holds protocol version ${REDIS_PROTOCOL_VERSION + 1}, this control plane speaks version ${REDIS_PROTOCOL_VERSION}`,
    );
    expect(await redis.hget(head, "version")).toBe("5");
    // The running enforcer refuses the head too, and keeps its policy.
    await enforcer.refreshPolicy();
    expect(enforcer.status().snapshotErrors.lastMessage).toMatch(/Redis protocol mismatch/);
    expect(version(enforcer)).toBe(5);
  });
});

describe("startup without Redis", () => {
  it("waits a bounded time, admits without a policy and says it is not ready, then follows Redis when it comes", async () => {
    const port = await freePort();
    const prefix = filePrefix("su");
    const { enforcer, logs } = await start(prefix, {
      redis: { url: `redis://127.0.0.1:${port}/0` },
      controlPlane: { startupWaitMs: 200 },
    });
    expect(enforcer.status().isReady).toBe(false);
    // A wrong URL or prefix never passes for a working limiter: one line says which Redis, one
    // which key nothing was published under.
    expect(logs.filter((line) => line.level === "error")).toEqual([
      {
        level: "error",
        message: expect.stringMatching(/^cannot reach Redis: /),
        fields: expect.objectContaining({
          redis: `redis://127.0.0.1:${port}/0`,
          error: expect.stringContaining("ECONNREFUSED"),
        }),
      },
    ]);
    expect(logs).toContainEqual({
      level: "warn",
      message: expect.stringMatching(/^no policy snapshot yet: nothing is limited until/),
      fields: expect.objectContaining({ policyHead: `${prefix}{policy}:head` }),
    });
    const result = await enforcer.check({ customerId: "initech", method: "GET", path: "/" });
    expect(result.decision).toMatchObject({ allowed: true, source: "no-policy" });

    const own = await privateRedis(port);
    try {
      const client = new Redis(own.url);
      await publishTestSnapshot(client, prefix, snapshotVersion(1));
      client.disconnect();
      await untilVersion(enforcer, 1);
      expect(enforcer.status().isReady).toBe(true);
      await waitFor("a line saying Redis answers", () =>
        logs.find((line) => line.level === "info" && line.message.startsWith("Redis answering")),
      );
    } finally {
      await own.stop();
    }
  });

  it("with a bootstrap snapshot, enforces it from the first request", async () => {
    const port = await freePort();
    const { enforcer } = await start(filePrefix("sb"), {
      redis: { url: `redis://127.0.0.1:${port}/0` },
      controlPlane: { startupWaitMs: 100, bootstrapSnapshot: JSON.stringify(snapshotVersion(1)) },
      // Time stands still for the buckets, so the 21 checks see the same instant however long a
      // busy machine takes to run them: a refill in between would rightly admit a 21st.
      store: () => new MemoryStore({ clock: new ManualClock(0) }),
    });
    expect(enforcer.status()).toMatchObject({
      isReady: true,
      policy: { version: 1, trigger: "bootstrap" },
    });
    const results = await Promise.all(
      Array.from({ length: 21 }, () =>
        enforcer.check({ customerId: "initech", tier: "free", method: "GET", path: "/" }),
      ),
    );
    expect(results.filter((result) => result.decision.allowed)).toHaveLength(20);
  });
});

describe("what an enforcer reports for the console", () => {
  it("a heartbeat hash with a TTL and a sorted set of enforcer ids; removed on stop", async () => {
    const prefix = filePrefix("hb");
    await publishTestSnapshot(redis, prefix, snapshotVersion(1));
    const { enforcer } = await start(prefix, { reporting: { heartbeatTtlMs: 5_000 } });
    const key = `${prefix}enforcer:${enforcer.enforcerId}`;
    const hash = await redis.hgetall(key);
    expect(hash).toMatchObject({ id: enforcer.enforcerId, version: "1", breakerState: "closed" });
    expect(Number(hash.appliedAt)).toBeGreaterThanOrEqual(Number(hash.publishedAt));
    expect(await redis.pttl(key)).toBeGreaterThan(0);
    expect(await redis.zscore(`${prefix}enforcers`, enforcer.enforcerId)).not.toBeNull();
    await enforcer.stop();
    expect(await redis.exists(key)).toBe(0);
    expect(await redis.zscore(`${prefix}enforcers`, enforcer.enforcerId)).toBeNull();
  });

  it("per-scope counts in expiring second and minute hashes, and each customer's recent rejections", async () => {
    const prefix = filePrefix("mx");
    await publishTestSnapshot(redis, prefix, snapshotVersion(1));
    const { enforcer } = await start(prefix, { local: false });
    for (let i = 0; i < 22; i++) {
      await enforcer.check({ customerId: "initech", tier: "free", method: "GET", path: "/" });
    }
    // Summed over every minute hash this test wrote (the 22 may straddle a minute).
    const totals = await waitFor("the flush", async () => {
      const keys = await redis.keys(`${prefix}metrics:min:*`);
      const sums: Record<string, number> = {};
      for (const key of keys) {
        for (const [field, value] of Object.entries(await redis.hgetall(key))) {
          sums[field] = (sums[field] ?? 0) + Number(value);
        }
      }
      return sums["@latency|count"] === 22 ? sums : undefined;
    });
    expect(totals).toMatchObject({
      "tier:free|allowed": 20,
      "tier:free|rejected": 2,
      "candidate:free-halved|allowed": 10,
      "candidate:free-halved|wouldReject": 12,
      "ceiling|allowed": 20,
    });
    const [secondKey] = await redis.keys(`${prefix}metrics:sec:*`);
    const [minuteKey] = await redis.keys(`${prefix}metrics:min:*`);
    expect(await redis.pttl(secondKey ?? "")).toBeGreaterThan(3_600_000);
    expect(await redis.pttl(minuteKey ?? "")).toBeGreaterThan(3 * 3_600_000);

    const rejections = (await redis.lrange(`${prefix}rejections:initech`, 0, -1)).map(
      (entry) => JSON.parse(entry) as Record<string, unknown>,
    );
    // Both rejections, by one limit within a second: one entry counting two.
    expect(rejections).toHaveLength(1);
    expect(rejections[0]).toMatchObject({
      count: 2,
      scope: "tier:free",
      endpointClass: "default",
      enforcerId: enforcer.enforcerId,
    });
    expect(await redis.pttl(`${prefix}rejections:initech`)).toBeGreaterThan(0);
    expect(await redis.zscore(`${prefix}rejections:customers`, "initech")).not.toBeNull();
  });
});
