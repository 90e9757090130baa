import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ManualClock } from "../src/limiter/clock";
import { RedisStore } from "../src/limiter/stores/redis";
import { ManualTimers } from "../src/limiter/timers";
import type { LimitCheck, LimitMode, LimitSpec } from "../src/limiter/types";
import { atUtc } from "../src/testing/times";
import { readyRedis } from "./support/redis";
import { packedStateOf, writePackedState } from "./support/stored-state";

/*
 * Leases in the decide script (`RedisStore.decideLeasing`), on the real Redis with the tests'
 * clock: what a lease grants, for how long, and that spending it can never admit more than the
 * limit, whenever within its lifetime the units are spent.
 */

const check = (bucket: string, limit: LimitSpec, mode: LimitMode = "enforce"): LimitCheck => ({
  scope: bucket,
  bucket,
  limit,
  mode,
});
const tokens = (capacity: number, refillPerSec: number): LimitSpec => ({
  algorithm: "token-bucket",
  capacity,
  refillPerSec,
});

describe("RedisStore leases", () => {
  let client: Redis;
  const runPrefix = inject("redisKeyPrefix");
  let clock: ManualClock;
  let store: RedisStore;
  let subjects = 0;
  const subject = () => `c:lease-${++subjects}`;

  beforeAll(async () => {
    client = await readyRedis("decisions");
    clock = new ManualClock(atUtc("10:00:00"));
    store = new RedisStore({ client, keyPrefix: `${runPrefix}lease:`, clock });
  });

  afterAll(async () => {
    await client.quit();
  });

  /** Plain decisions of cost 1 until one is rejected: how many were admitted. */
  async function admitAll(who: string, checks: readonly LimitCheck[]): Promise<number> {
    let admitted = 0;
    while ((await store.decide({ subject: who, checks })).allowed) admitted++;
    return admitted;
  }

  it("grants at most half of what is left on every check, and at most what was wanted", async () => {
    const who = subject();
    const checks = [check("account", tokens(100, 0.001)), check("ceiling", tokens(30, 0.001))];
    const first = await store.decideLeasing({ subject: who, checks }, { units: 50, lifeMs: 1_000 });
    expect(first.decision.allowed).toBe(true);
    // The ceiling has 29 left after the request: half is 14.
    expect(first).toMatchObject({ units: 14, lifeMs: 1_000 });
    // `remaining` is after the request, before the lease.
    expect(first.decision.outcomes.map((o) => o.remaining)).toEqual([99, 29]);
    const second = await store.decideLeasing({ subject: who, checks }, { units: 3, lifeMs: 500 });
    expect(second).toMatchObject({ units: 3, lifeMs: 500 });
    expect(second.decision.outcomes.map((o) => o.remaining)).toEqual([84, 14]);
  });

  it("shrinks to nothing near the limit: the units leased and admitted never exceed it", async () => {
    const who = subject();
    const checks = [check("account", tokens(40, 0.001))];
    let admitted = 0;
    let leased = 0;
    const grants: number[] = [];
    for (;;) {
      const answer = await store.decideLeasing(
        { subject: who, checks },
        { units: 8, lifeMs: 60_000 },
      );
      if (!answer.decision.allowed) break;
      admitted++;
      leased += answer.units;
      grants.push(answer.units);
    }
    expect(admitted + leased).toBe(40);
    expect(grants[0]).toBe(8);
    expect(grants.at(-1)).toBe(0);
    // Never more than half of what was left after the request.
    let left = 40;
    for (const units of grants) {
      left -= 1;
      expect(units).toBeLessThanOrEqual(Math.floor(left / 2));
      left -= units;
    }
  });

  it("token bucket: while a lease lives the capacity is short of it, so no burst exceeds the capacity", async () => {
    const who = subject();
    const checks = [check("account", tokens(10, 10))];
    const lease = await store.decideLeasing({ subject: who, checks }, { units: 4, lifeMs: 1_000 });
    expect(lease).toMatchObject({ units: 4, lifeMs: 1_000 });
    // 5 tokens left, and the bucket refills only up to 10 - 4 while the lease lives.
    clock.advance(500);
    const burst = await admitAll(who, checks);
    // With the lease's 4 spent now too, 10 in one instant: the capacity, never more.
    expect(burst).toBe(6);
    // From empty at t+500: 5 more by the time the lease ends, then the whole capacity again.
    clock.advance(500);
    expect(await admitAll(who, checks)).toBe(5);
    clock.advance(1_000);
    expect(await admitAll(who, checks)).toBe(10);
  });

  /** The reservations a token bucket's stored state holds: [units, until, units, until]. */
  async function reservationsOf(who: string, bucket: string): Promise<number[]> {
    const packed = await packedStateOf(client, store, who, bucket);
    if (packed === null || packed.length !== 49) return [];
    return [17, 25, 33, 41].map((offset) => packed.readDoubleLE(offset));
  }

  it("token bucket: a second lease takes a second reservation, a third joins the later one", async () => {
    const who = subject();
    const checks = [check("account", tokens(1_000, 0.001))];
    const leased = { subject: who, checks };
    const startMs = clock.nowMs();
    const a = await store.decideLeasing(leased, { units: 100, lifeMs: 1_000 });
    clock.advance(200);
    const b = await store.decideLeasing(leased, { units: 100, lifeMs: 1_000 });
    clock.advance(300);
    // Both reservations live: it joins the later one, which ends 700 ms from now.
    const c = await store.decideLeasing(leased, { units: 100, lifeMs: 1_000 });
    expect([a.lifeMs, b.lifeMs, c.lifeMs]).toEqual([1_000, 1_000, 700]);
    expect(await reservationsOf(who, "account")).toEqual([
      100,
      startMs + 1_000,
      100 + 100,
      startMs + 1_200,
    ]);
    clock.advance(460);
    // Under a quarter of the lifetime wanted is left of the later reservation: the two fold into
    // one that ends with the later, and this lease takes the second place, whole (the earlier is
    // held 200 ms longer than it needed: less capacity for longer, never more).
    const d = await store.decideLeasing(leased, { units: 100, lifeMs: 1_000 });
    expect(d).toMatchObject({ units: 100, lifeMs: 1_000 });
    expect(d.decision.allowed).toBe(true);
    expect(await reservationsOf(who, "account")).toEqual([
      300,
      startMs + 1_200,
      100,
      startMs + 1_960,
    ]);
    // Refill is negligible: everything leased or admitted adds up to the capacity.
    clock.advance(1_000);
    const rest = await admitAll(who, checks);
    expect(4 + a.units + b.units + c.units + d.units + rest).toBe(1_000);
  });

  it("token bucket: folded reservations still cap a burst at the capacity", async () => {
    const who = subject();
    const checks = [check("account", tokens(10, 10))];
    const leased = { subject: who, checks };
    const startMs = clock.nowMs();
    // Leases at 0, 100 and 900 ms: the third folds the first two (the second had 200 ms left).
    const grants: { units: number; endsAtMs: number }[] = [];
    for (const atMs of [0, 100, 900]) {
      clock.set(startMs + atMs);
      const answer = await store.decideLeasing(leased, { units: 2, lifeMs: 1_000 });
      grants.push({ units: answer.units, endsAtMs: clock.nowMs() + answer.lifeMs });
    }
    expect(grants.map((g) => g.units)).toEqual([2, 2, 2]);
    expect(await reservationsOf(who, "account")).toEqual([4, startMs + 1_100, 2, startMs + 1_900]);
    // At every moment, what a burst takes plus the leased units still alive (a gateway may spend
    // them then) is never more than the capacity.
    for (const atMs of [900, 1_000, 1_050, 1_099, 1_100, 1_500, 2_000]) {
      clock.set(startMs + atMs);
      const burst = await admitAll(who, checks);
      const live = grants
        .filter((g) => g.endsAtMs > clock.nowMs())
        .reduce((sum, g) => sum + g.units, 0);
      expect(burst + live, `at ${atMs} ms`).toBeLessThanOrEqual(10);
    }
  });

  it("fixed and sliding window: the lease ends with the window, shrinks with it, and its units count in it", async () => {
    const who = subject();
    // 10:00:00 + the clock's advances so far; put the request 4 s before a minute ends.
    const minute = 60_000;
    clock.advance(minute - (clock.nowMs() % minute) - 4_000);
    const checks = [
      check("fixed", { algorithm: "fixed-window", limit: 100, windowMs: minute }),
      check("window", { algorithm: "sliding-window", limit: 1_000, windowMs: minute }),
    ];
    const answer = await store.decideLeasing(
      { subject: who, checks },
      { units: 20, lifeMs: 10_000 },
    );
    // 4 s of the 10 s wanted are left in the window: 4/10 of the 20 units wanted.
    expect(answer).toMatchObject({ units: 8, lifeMs: 4_000 });
    expect(await admitAll(who, checks)).toBe(100 - 1 - 8);
  });

  it("grants nothing on a rejection, a sliding log, a leaky meter, or a dry-run limit that would reject", async () => {
    const leaseOf = async (checks: readonly LimitCheck[]) =>
      (await store.decideLeasing({ subject: subject(), checks }, { units: 5, lifeMs: 1_000 }))
        .units;
    expect(
      await leaseOf([check("log", { algorithm: "sliding-log", limit: 100, windowMs: 60_000 })]),
    ).toBe(0);
    expect(
      await leaseOf([check("meter", { algorithm: "leaky-meter", burst: 100, drainPerSec: 1 })]),
    ).toBe(0);
    expect(
      await leaseOf([
        check("account", tokens(100, 1)),
        check("candidate", tokens(0, 1), "dry-run"),
      ]),
    ).toBe(0);
    const who = subject();
    const tight = [check("account", tokens(1, 0.001))];
    await store.decide({ subject: who, checks: tight });
    const rejected = await store.decideLeasing(
      { subject: who, checks: tight },
      { units: 5, lifeMs: 1_000 },
    );
    expect(rejected.decision.allowed).toBe(false);
    expect(rejected.units).toBe(0);
  });

  it("a plain decision keeps the reservations, and reads a bucket without any", async () => {
    const who = subject();
    const checks = [check("account", tokens(10, 10))];
    await store.decideLeasing({ subject: who, checks }, { units: 4, lifeMs: 1_000 });
    // A plain decision (no lease) in between must not drop the reservation.
    await store.decide({ subject: who, checks });
    clock.advance(500);
    expect(await admitAll(who, checks)).toBe(6);
    // A token bucket without reservations: 17 bytes, tokens and time.
    const old = subject();
    const packed = Buffer.alloc(17);
    packed.writeUInt8(4, 0);
    packed.writeDoubleLE(3, 1);
    packed.writeDoubleLE(clock.nowMs(), 9);
    await writePackedState(client, store, old, "account", packed, 60_000);
    expect(await admitAll(old, checks)).toBe(3);
  });

  it("calls held back ride with the next decision and are charged exactly as if sent alone", async () => {
    // Batching on, and timers that never fire by themselves: a held call can only leave with
    // another decision (if riding were broken, the held calls would never be answered).
    const batching = new RedisStore({
      client,
      keyPrefix: `${runPrefix}lease:`,
      clock,
      maxBatchSize: 64,
      timers: new ManualTimers(),
    });
    const checks = [check("account", tokens(100, 0.001)), check("ceiling", tokens(30, 0.001))];
    const [alone, first, second] = [subject(), subject(), subject()];
    const wanted = { units: 10, lifeMs: 1_000 };
    const expected = await store.decideLeasing({ subject: alone, checks }, wanted);
    const held = [first, second].map((who) =>
      batching.decideLeasing({ subject: who, checks }, { ...wanted, maxDelayMs: 60_000 }),
    );
    // The plain decision comes in a later turn than the held calls, as a request would.
    await new Promise((resolve) => setImmediate(resolve));
    const plain = await batching.decide({ subject: subject(), checks });
    expect(plain.allowed).toBe(true);
    const answers = await Promise.all(held);
    for (const answer of answers) {
      expect(answer).toMatchObject({ units: expected.units, lifeMs: expected.lifeMs });
      expect(answer.decision.outcomes.map((o) => o.remaining)).toEqual(
        expected.decision.outcomes.map((o) => o.remaining),
      );
    }
    // The leased units are charged in Redis: a plain request sees them gone.
    for (const who of [alone, first, second]) {
      const after = await store.decide({ subject: who, checks });
      expect(after.outcomes.map((o) => o.remaining)).toEqual([88, 18]);
    }
  });

  it("refuses a lease request out of range, naming the field, and the script refuses a malformed one", async () => {
    const input = { subject: subject(), checks: [check("account", tokens(10, 1))] };
    await expect(store.decideLeasing(input, { units: -1, lifeMs: 1_000 })).rejects.toThrow(
      /lease\.units/,
    );
    await expect(store.decideLeasing(input, { units: 1.5, lifeMs: 1_000 })).rejects.toThrow(
      /lease\.units/,
    );
    await expect(store.decideLeasing(input, { units: 1, lifeMs: 3_600_001 })).rejects.toThrow(
      /lease\.lifeMs/,
    );
    const key = store.subjectKey(input.subject);
    // The function the store loaded (the same checks run in the EVAL form: hostile-input.test.ts).
    for (const head of [
      "l - 1 1",
      "l - 1 1 5",
      "l - 1 1 5 -1",
      "l - 1 1 2000000000 5",
      "d - 1 1 5 5",
    ]) {
      await expect(
        client.fcall(RedisStore.functionName, 1, key, "1000", head, "4 10 1 e"),
      ).rejects.toThrow(/malformed decision/);
    }
  });

  describe("returnLease: unspent units go back exactly, once, and never into another's room", () => {
    const windowOf = (algorithm: "fixed-window" | "sliding-window"): LimitSpec =>
      ({ algorithm, limit: 100, windowMs: 60_000 }) as LimitSpec;

    /** One request that leases `units` for `lifeMs` on a fresh subject: its answer. */
    async function leased(checks: readonly LimitCheck[], units: number, lifeMs = 1_000) {
      const who = subject();
      const answer = await store.decideLeasing({ subject: who, checks }, { units, lifeMs });
      expect(answer.units).toBe(units);
      return { who, answer };
    }

    it.each([
      ["fixed window", windowOf("fixed-window")],
      ["sliding window", windowOf("sliding-window")],
      ["token bucket", tokens(100, 0.001)],
    ])(
      "%s: given back within its lifetime, every unspent unit is admitted again",
      async (_, limit) => {
        // The clock sits 10 s into a minute: the windows have 50 s to run.
        clock.set(atUtc("10:20:10"));
        const checks = [check("account", limit)];
        const { who, answer } = await leased(checks, 30);
        clock.advance(100);
        const back = await store.returnLease(
          { subject: who, checks },
          { units: 30, grantedAtMs: answer.grantedAtMs, lifeMs: answer.lifeMs },
        );
        expect(back).toBe(30);
        // 100 - the granting request: 99, as if the lease had never been.
        expect(await admitAll(who, checks)).toBe(99);
      },
    );

    it("fixed window: units of a window that is over are not given back, nor written anywhere", async () => {
      clock.set(atUtc("10:21:50"));
      const checks = [check("account", windowOf("fixed-window"))];
      const { who, answer } = await leased(checks, 40);
      clock.set(atUtc("10:22:01"));
      const back = await store.returnLease(
        { subject: who, checks },
        { units: 40, grantedAtMs: answer.grantedAtMs, lifeMs: answer.lifeMs },
      );
      expect(back).toBe(0);
      // The new window is whole, never more.
      expect(await admitAll(who, checks)).toBe(100);
    });

    it("sliding window: units given back after the next window began come off the previous count", async () => {
      clock.set(atUtc("10:23:30"));
      const limit = windowOf("sliding-window");
      const checks = [check("account", limit)];
      const { who, answer } = await leased(checks, 40);
      const control = await leased(checks, 40);
      // Half into the next window: the previous window's 41 weigh 20.5 for both subjects.
      clock.set(atUtc("10:24:30"));
      const back = await store.returnLease(
        { subject: who, checks },
        { units: 40, grantedAtMs: answer.grantedAtMs, lifeMs: answer.lifeMs },
      );
      expect(back).toBe(40);
      // The previous count is 1 now: it weighs 0.5, so 99 are admitted; the control keeps 41.
      expect(await admitAll(who, checks)).toBe(99);
      expect(await admitAll(control.who, checks)).toBe(79);
    });

    it("token bucket: a return releases the earliest reservation, and no burst ever exceeds the capacity", async () => {
      const checks = [check("account", tokens(100, 0.001))];
      const who = subject();
      const input = { subject: who, checks };
      const a = await store.decideLeasing(input, { units: 40, lifeMs: 1_000 });
      clock.advance(200);
      const b = await store.decideLeasing(input, { units: 20, lifeMs: 1_000 });
      expect([a.units, b.units]).toEqual([40, 20]);
      expect(await reservationsOf(who, "account")).toEqual([
        40,
        a.grantedAtMs + 1_000,
        20,
        b.grantedAtMs + 1_000,
      ]);
      // A spent 10 of its 40: 30 go back while its lifetime runs.
      clock.advance(100);
      expect(
        await store.returnLease(input, {
          units: 30,
          grantedAtMs: a.grantedAtMs,
          lifeMs: a.lifeMs,
        }),
      ).toBe(30);
      expect(await reservationsOf(who, "account")).toEqual([
        10,
        a.grantedAtMs + 1_000,
        20,
        b.grantedAtMs + 1_000,
      ]);
      // In Redis: 100 - 2 requests - 60 leased + 30 back = 68. With the 2 requests, the 10 A
      // spent and the 20 B holds (spent now too), that is the capacity exactly.
      expect(await admitAll(who, checks)).toBe(68);
      // A's reservation (10 left) ends; B's still holds its 20.
      clock.advance(800);
      expect(await admitAll(who, checks)).toBe(0);
      expect(await reservationsOf(who, "account")).toEqual([20, b.grantedAtMs + 1_000, 0, 0]);
    });

    it("token bucket: a return after the grant's lifetime gives the tokens back, capped, reservations untouched", async () => {
      const checks = [check("account", tokens(100, 0.001))];
      const { who, answer } = await leased(checks, 49);
      clock.advance(1_500);
      const back = await store.returnLease(
        { subject: who, checks },
        { units: 49, grantedAtMs: answer.grantedAtMs, lifeMs: answer.lifeMs },
      );
      expect(back).toBe(49);
      expect(await admitAll(who, checks)).toBe(99);
    });

    it("gives nothing back to a bucket whose limit changed algorithm since", async () => {
      const bucketChecks = [check("account", tokens(100, 0.001))];
      const { who, answer } = await leased(bucketChecks, 30);
      const windowChecks = [check("account", windowOf("fixed-window"))];
      // The policy now counts the bucket as a window: its first request starts it fresh.
      expect(await admitAll(who, windowChecks)).toBe(100);
      // The return names the checks the lease was granted on, as the gateway keeps them.
      const back = await store.returnLease(
        { subject: who, checks: bucketChecks },
        { units: 30, grantedAtMs: answer.grantedAtMs, lifeMs: answer.lifeMs },
      );
      expect(back).toBe(0);
      expect(await admitAll(who, windowChecks)).toBe(0);
    });

    it("refuses a return out of range, naming the field", async () => {
      const input = { subject: subject(), checks: [check("account", tokens(10, 1))] };
      await expect(
        store.returnLease(input, { units: 1.5, grantedAtMs: 0, lifeMs: 1_000 }),
      ).rejects.toThrow(/lease\.units/);
      await expect(
        store.returnLease(input, { units: 1, grantedAtMs: Number.NaN, lifeMs: 1_000 }),
      ).rejects.toThrow(/lease\.grantedAtMs/);
      await expect(
        store.returnLease(input, { units: 1, grantedAtMs: 0, lifeMs: -1 }),
      ).rejects.toThrow(/lease\.lifeMs/);
      const key = store.subjectKey(input.subject);
      for (const head of ["r - 1 1", "r - 1 1 x 5", "r - 1 1 5 -1", "r - 1 1 1e300 5"]) {
        await expect(
          client.fcall(RedisStore.functionName, 1, key, "1000", head, "4 10 1 e"),
        ).rejects.toThrow(/malformed decision/);
      }
    });
  });
});
