import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ManualClock } from "../src/limiter/clock";
import { RedisStore } from "../src/limiter/stores/redis";
import type { LimitCheck, LimitMode, LimitSpec } from "../src/limiter/types";
import { atUtc } from "../src/testing/times";
import { readyRedis } from "./support/redis";
import { packedStateOf, writePackedState } from "./support/stored-state";

/*
 * What Redis holds after decisions: every key expires, and a bucket's key and state survive a
 * policy edit (numbers changed: kept and clamped; algorithm changed: started fresh).
 */

const check = (
  bucket: string,
  limit: LimitSpec,
  mode: LimitMode = "enforce",
  scope = bucket,
): LimitCheck => ({ scope, bucket, limit, mode });

/** Every key under `prefix`, with its PTTL in ms (-1: no expiry, -2: gone since the scan). */
async function ttlsUnder(client: Redis, prefix: string): Promise<Map<string, number>> {
  const ttls = new Map<string, number>();
  let cursor = "0";
  do {
    const [next, keys] = await client.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
    cursor = next;
    for (const key of keys) ttls.set(key, await client.pttl(key));
  } while (cursor !== "0");
  return ttls;
}

describe("RedisStore state", () => {
  let client: Redis;
  const runPrefix = inject("redisKeyPrefix");

  beforeAll(async () => {
    client = await readyRedis("decisions");
  });

  afterAll(async () => {
    await client.quit();
  });

  it("after a mixed workload over every algorithm, every key has an expiry", async () => {
    const prefix = `${runPrefix}ttl:`;
    // Redis TIME, as in production; sub-second windows, costs that get rejected, dry-run checks.
    const live = new RedisStore({ client, keyPrefix: prefix });
    const clock = new ManualClock(atUtc("10:00:00"));
    const clocked = new RedisStore({ client, keyPrefix: prefix, clock });
    const checks = [
      check("fixed", { algorithm: "fixed-window", limit: 3, windowMs: 50 }),
      check("log", { algorithm: "sliding-log", limit: 4, windowMs: 200 }),
      check("window", { algorithm: "sliding-window", limit: 5, windowMs: 100 }),
      check("tokens", { algorithm: "token-bucket", capacity: 6, refillPerSec: 20 }),
      check("meter", { algorithm: "leaky-meter", burst: 7, drainPerSec: 30 }),
      check("candidate:1", { algorithm: "sliding-log", limit: 1, windowMs: 1 }, "dry-run"),
      check("candidate:2", { algorithm: "token-bucket", capacity: 1, refillPerSec: 1 }, "dry-run"),
    ];
    let rejections = 0;
    for (let i = 0; i < 200; i++) {
      const subject = `c:tenant-${i % 13}`;
      const cost = i % 17 === 0 ? 50 : 1 + (i % 3);
      const decision = await live.decide({ subject, checks: checks.slice(i % 5), cost });
      if (!decision.allowed) rejections++;
      // Each check alone too: a rejection by one limit writes only that limit's state.
      for (const single of checks) {
        await live.decide({ subject: `a:192.0.2.${i % 7}`, checks: [single], cost });
      }
      await live.shape({
        subject,
        bucket: "queue",
        limit: { algorithm: "leaky-shaper", maxQueue: 3, drainPerSec: 50 },
        cost: 1,
      });
      clock.advance(i % 2 === 0 ? 7 : -3);
      await clocked.decide({ subject: `c:clocked-${i % 5}`, checks, cost });
    }
    expect(rejections).toBeGreaterThan(0);

    const ttls = await ttlsUnder(client, prefix);
    expect(ttls.size).toBeGreaterThan(50);
    // A sub-second key may expire between the scan and its PTTL (-2); none may lack an expiry.
    const withoutExpiry = [...ttls].filter(([, ttl]) => ttl === -1 || ttl === 0);
    expect(withoutExpiry).toEqual([]);
    expect([...ttls.values()].filter((ttl) => ttl > 0).length).toBeGreaterThan(50);
  });

  describe("a policy edit on the same bucket", () => {
    const clock = new ManualClock(atUtc("10:00:00"));
    let store: RedisStore;
    let subjectCount = 0;
    const newSubject = () => `c:edit-${++subjectCount}`;

    beforeAll(() => {
      store = new RedisStore({ client, keyPrefix: `${runPrefix}edit:`, clock });
    });

    /** What a check on `bucket` has left now, consuming nothing. */
    const remaining = async (subject: string, bucket: string, limit: LimitSpec) =>
      (await store.peek({ subject, checks: [check(bucket, limit)], cost: 0 })).remaining;

    it.each<[string, (size: number) => LimitSpec]>([
      [
        "token-bucket",
        (capacity) => ({ algorithm: "token-bucket", capacity, refillPerSec: 0.001 }),
      ],
      ["leaky-meter", (burst) => ({ algorithm: "leaky-meter", burst, drainPerSec: 0.001 })],
      ["fixed-window", (limit) => ({ algorithm: "fixed-window", limit, windowMs: 3_600_000 })],
      ["sliding-log", (limit) => ({ algorithm: "sliding-log", limit, windowMs: 3_600_000 })],
      ["sliding-window", (limit) => ({ algorithm: "sliding-window", limit, windowMs: 3_600_000 })],
    ])(
      "%s: a lowered size clamps what is stored, a raised one adds nothing",
      async (name, sized) => {
        const subject = newSubject();
        clock.set(atUtc("10:00:00"));
        await store.decide({ subject, checks: [check("account", sized(10))], cost: 4 });
        expect(await remaining(subject, "account", sized(10))).toBe(6);

        // Lowered to 3: at most 3 left (a window's count of 4 already exceeds it: none left).
        const lowered = await remaining(subject, "account", sized(3));
        expect(lowered).toBeLessThanOrEqual(3);
        await store.decide({ subject, checks: [check("account", sized(3))], cost: lowered });
        expect(
          (await store.decide({ subject, checks: [check("account", sized(3))] })).allowed,
        ).toBe(false);

        // Raised to 20: the edit adds nothing. A bucket stays empty; a window keeps its count.
        const isBucket = name === "token-bucket" || name === "leaky-meter";
        const raised = await remaining(subject, "account", sized(20));
        expect(raised).toBe(isBucket ? 0 : 20 - 4 - lowered);
        // One key: the subject's hash (a sliding log's entries have their own key besides).
        const keys = await client.keys(`${runPrefix}edit:rl*{${subject}}*`);
        expect(keys.sort()).toEqual(
          [
            store.subjectKey(subject),
            ...(name === "sliding-log" ? [store.logKey(subject, "account")] : []),
          ].sort(),
        );
      },
    );

    it("an algorithm switch starts the bucket fresh, and switching back does too", async () => {
      const subject = newSubject();
      const tokens: LimitSpec = { algorithm: "token-bucket", capacity: 5, refillPerSec: 0.001 };
      const log: LimitSpec = { algorithm: "sliding-log", limit: 8, windowMs: 3_600_000 };
      const window: LimitSpec = { algorithm: "fixed-window", limit: 7, windowMs: 3_600_000 };
      clock.set(atUtc("11:00:00"));
      await store.decide({ subject, checks: [check("account", tokens)], cost: 5 });
      expect(await remaining(subject, "account", tokens)).toBe(0);

      // A string state read as a sorted set, and back: each starts full.
      await store.decide({ subject, checks: [check("account", log)], cost: 2 });
      expect(await remaining(subject, "account", log)).toBe(6);
      expect(await remaining(subject, "account", tokens)).toBe(5);
      await store.decide({ subject, checks: [check("account", tokens)], cost: 1 });
      expect(await remaining(subject, "account", tokens)).toBe(4);
      expect(await remaining(subject, "account", log)).toBe(8);
      expect(await remaining(subject, "account", window)).toBe(7);
    });
  });

  describe("across a deploy of the script", () => {
    const clock = new ManualClock(atUtc("12:00:00"));
    let store: RedisStore;
    beforeAll(() => {
      store = new RedisStore({ client, keyPrefix: `${runPrefix}upgrade:`, clock });
    });

    /** A packed state as every release since packed doubles writes it: code byte, then doubles. */
    const packed = (code: number, ...numbers: number[]): Buffer => {
      const value = Buffer.alloc(1 + 8 * numbers.length);
      value[0] = code;
      for (const [i, n] of numbers.entries()) value.writeDoubleLE(n, 1 + 8 * i);
      return value;
    };

    it.each<[string, LimitSpec, (nowMs: number) => Buffer]>([
      [
        "token-bucket",
        { algorithm: "token-bucket", capacity: 10, refillPerSec: 1 },
        (t) => packed(4, 3, t),
      ],
      [
        "fixed-window",
        { algorithm: "fixed-window", limit: 10, windowMs: 60_000 },
        (t) => packed(1, t, 7),
      ],
      [
        "sliding-window",
        { algorithm: "sliding-window", limit: 10, windowMs: 60_000 },
        (t) => packed(3, t, 7, 0),
      ],
      [
        "leaky-meter",
        { algorithm: "leaky-meter", burst: 10, drainPerSec: 1 },
        (t) => packed(5, t - 3_000),
      ],
    ])(
      "a %s state is read as it is from the subject's hash: 3 left, 2 after one more",
      async (name, limit, stateAt) => {
        const subject = `${name}:${crypto.randomUUID()}`;
        await writePackedState(
          client,
          store,
          subject,
          "account",
          stateAt(clock.nowMs()),
          3_600_000,
        );
        const decision = await store.decide({ subject, checks: [check("account", limit)] });
        expect(decision.allowed).toBe(true);
        expect(decision.remaining).toBe(2);
        expect((await packedStateOf(client, store, subject, "account"))?.[0]).toBe(stateAt(0)[0]);
        const next = await store.decide({ subject, checks: [check("account", limit)] });
        expect(next.remaining).toBe(1);
      },
    );

    it("a value in no layout this script writes (old text, a wrong length) is ignored, never an error", async () => {
      const limit: LimitSpec = { algorithm: "token-bucket", capacity: 10, refillPerSec: 1 };
      for (const value of ["3 1796083200000", Buffer.from([4, 1, 2, 3])]) {
        const subject = `foreign:${crypto.randomUUID()}`;
        await writePackedState(client, store, subject, "account", value, 3_600_000);
        const decision = await store.decide({ subject, checks: [check("account", limit)] });
        expect(decision.remaining).toBe(9);
      }
    });

    it("a subject key holding something other than a hash is no state, and is replaced", async () => {
      const limit: LimitSpec = { algorithm: "token-bucket", capacity: 10, refillPerSec: 1 };
      const subject = `wrong-type:${crypto.randomUUID()}`;
      await client.set(store.subjectKey(subject), "not a hash", "PX", 3_600_000);
      const checks = [check("account", limit)];
      expect(await store.peek({ subject, checks })).toMatchObject({ remaining: 9 });
      expect(await client.type(store.subjectKey(subject))).toBe("string");
      expect(await store.decide({ subject, checks })).toMatchObject({ remaining: 9 });
      expect(await client.type(store.subjectKey(subject))).toBe("hash");
      expect(await store.decide({ subject, checks })).toMatchObject({ remaining: 8 });
    });
  });
});
