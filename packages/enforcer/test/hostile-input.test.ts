import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { LIMIT_BOUNDS } from "../src/limiter/arguments";
import { ManualClock } from "../src/limiter/clock";
import { decideLayered } from "../src/limiter/layered";
import { stepLeakyShaper } from "../src/limiter/leaky-shaper";
import { MemoryStore } from "../src/limiter/stores/memory";
import { RedisStore } from "../src/limiter/stores/redis";
import { REDIS_DECIDE_LUA } from "../src/limiter/stores/redis-decide-script";
import type {
  DecideInput,
  LayeredDecision,
  LeakyShaperLimit,
  LimitCheck,
  LimitSpec,
} from "../src/limiter/types";
import { atUtc } from "../src/testing/times";
import { readyRedis } from "./support/redis";

/*
 * Hostile input to the public limiter API, on both stores and the pure core, table by table: each
 * value either throws a TypeError or RangeError naming the field, before anything is stored or
 * sent, or gives the documented result; nothing hangs (a hang fails the test by its timeout), and
 * Redis answers PING after every case. The Redis script is also called directly with the values
 * the client would refuse, since anyone with the connection can do that: it refuses them too.
 */

const T0 = atUtc("10:00:00");
const SECOND_MS = 1_000;

type Maker = (values: Record<string, unknown>) => LimitSpec;
const bucket: Maker = (v) =>
  ({ algorithm: "token-bucket", capacity: 20, refillPerSec: 10, ...v }) as LimitSpec;
const meter: Maker = (v) =>
  ({ algorithm: "leaky-meter", burst: 20, drainPerSec: 10, ...v }) as LimitSpec;
const log: Maker = (v) =>
  ({ algorithm: "sliding-log", limit: 20, windowMs: 60_000, ...v }) as LimitSpec;
const windowCounter: Maker = (v) =>
  ({ algorithm: "sliding-window", limit: 20, windowMs: 60_000, ...v }) as LimitSpec;
const fixed: Maker = (v) =>
  ({ algorithm: "fixed-window", limit: 20, windowMs: 60_000, ...v }) as LimitSpec;

interface BadLimit {
  readonly name: string;
  readonly limit: LimitSpec;
  readonly error: typeof TypeError | typeof RangeError;
  /** What the message must name. */
  readonly field: RegExp;
}

const HUGE_WINDOWS = [1e25, 1e308, 2 ** 53, LIMIT_BOUNDS.maxDurationMs + 1];
const NOT_FINITE = [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY];

const BAD_LIMITS: readonly BadLimit[] = [
  ...[log, windowCounter, fixed].flatMap((make) => [
    ...HUGE_WINDOWS.map((windowMs) => ({
      name: `${make({}).algorithm} windowMs ${windowMs}`,
      limit: make({ windowMs }),
      error: RangeError,
      field: /windowMs/,
    })),
    ...[...NOT_FINITE, 0, -1, 0.0001].map((windowMs) => ({
      name: `${make({}).algorithm} windowMs ${windowMs}`,
      limit: make({ windowMs }),
      error: RangeError,
      field: /windowMs/,
    })),
    {
      name: `${make({}).algorithm} windowMs as a string`,
      limit: make({ windowMs: "60000" }),
      error: TypeError,
      field: /windowMs/,
    },
    ...[1e308, 2 ** 53, 2 ** 53 + 2, ...NOT_FINITE, -1].map((limit) => ({
      name: `${make({}).algorithm} limit ${limit}`,
      limit: make({ limit }),
      error: RangeError,
      field: /\blimit\b/,
    })),
  ]),
  ...[1e308, 2 ** 53, 2 ** 53 + 2, ...NOT_FINITE, -1, -0.5].map((capacity) => ({
    name: `token-bucket capacity ${capacity}`,
    limit: bucket({ capacity }),
    error: RangeError,
    field: /capacity/,
  })),
  {
    name: "token-bucket capacity as a string",
    limit: bucket({ capacity: "20" }),
    error: TypeError,
    field: /capacity/,
  },
  ...[0, -1, 1e-300, 1e308, ...NOT_FINITE].map((refillPerSec) => ({
    name: `token-bucket refillPerSec ${refillPerSec}`,
    limit: bucket({ refillPerSec }),
    error: RangeError,
    field: /refillPerSec/,
  })),
  {
    name: "token-bucket that takes 31,700 years to refill",
    limit: bucket({ capacity: 1e9, refillPerSec: 1e-6 }),
    error: RangeError,
    field: /refillPerSec.*capacity/,
  },
  ...[1e308, ...NOT_FINITE, -1].map((burst) => ({
    name: `leaky-meter burst ${burst}`,
    limit: meter({ burst }),
    error: RangeError,
    field: /burst/,
  })),
  ...[0, 1e-300, ...NOT_FINITE].map((drainPerSec) => ({
    name: `leaky-meter drainPerSec ${drainPerSec}`,
    limit: meter({ drainPerSec }),
    error: RangeError,
    field: /drainPerSec/,
  })),
  {
    name: "an unknown algorithm",
    limit: { algorithm: "token-buckets", capacity: 20, refillPerSec: 10 } as unknown as LimitSpec,
    error: TypeError,
    field: /algorithm/,
  },
  {
    name: "a leaky shaper inside a layered decision",
    limit: { algorithm: "leaky-shaper", maxQueue: 5, drainPerSec: 1 } as unknown as LimitSpec,
    error: TypeError,
    field: /leaky-shaper/,
  },
];

interface BadRequest {
  readonly name: string;
  readonly input: DecideInput;
  readonly error: typeof TypeError | typeof RangeError;
  readonly field: RegExp;
  /** The pure core takes no subject: a subject problem is the stores' alone. */
  readonly isStoreOnly?: boolean;
}

const GOOD = bucket({});
const check = (overrides: Record<string, unknown> = {}): LimitCheck =>
  ({
    scope: "tier:pro",
    bucket: "account",
    limit: GOOD,
    mode: "enforce",
    ...overrides,
  }) as LimitCheck;

const BAD_REQUESTS: readonly BadRequest[] = [
  ...["enforced", "", "ENFORCE", "off"].map((mode) => ({
    name: `mode ${JSON.stringify(mode)}`,
    input: { subject: "c:x", checks: [check({ mode })] },
    error: RangeError,
    field: /mode/,
  })),
  ...[undefined, null, 1, true].map((mode) => ({
    name: `mode ${String(mode)}`,
    input: { subject: "c:x", checks: [check({ mode })] },
    error: TypeError,
    field: /mode/,
  })),
  ...["1", "", "10", null, true].map((cost) => ({
    name: `cost ${JSON.stringify(cost)}`,
    input: { subject: "c:x", checks: [check()], cost: cost as unknown as number },
    error: TypeError,
    field: /cost/,
  })),
  ...[...NOT_FINITE, -1, -1e-9].map((cost) => ({
    name: `cost ${cost}`,
    input: { subject: "c:x", checks: [check()], cost },
    error: RangeError,
    field: /cost/,
  })),
  {
    name: "a subject that is not a string",
    input: { subject: 42 as unknown as string, checks: [check()] },
    error: TypeError,
    field: /subject/,
    isStoreOnly: true,
  },
  {
    name: "a scope that is not a string",
    input: { subject: "c:x", checks: [check({ scope: 7 })] },
    error: TypeError,
    field: /scope/,
  },
  {
    name: "checks that are not a list",
    input: { subject: "c:x", checks: "tier:pro" as unknown as LimitCheck[] },
    error: TypeError,
    field: /checks/,
  },
  {
    name: "a check that is null",
    input: { subject: "c:x", checks: [null as unknown as LimitCheck] },
    error: TypeError,
    field: /checks\[0\]/,
  },
  {
    name: "two checks on one bucket",
    input: { subject: "c:x", checks: [check(), check({ scope: "ceiling" })] },
    error: RangeError,
    field: /share the bucket "account"/,
  },
];

describe("hostile input to the limiter API", () => {
  let client: Redis;
  let admin: Redis;
  let clock: ManualClock;
  let redisStore: RedisStore;
  let memoryStore: MemoryStore;
  const prefix = `${inject("redisKeyPrefix")}hostile:`;
  let subjectCount = 0;
  const subject = () => `c:hostile-${++subjectCount}`;

  beforeAll(async () => {
    client = await readyRedis("decisions");
    admin = await readyRedis("control");
    clock = new ManualClock(T0);
    redisStore = new RedisStore({ client, keyPrefix: prefix, clock });
    memoryStore = new MemoryStore({ clock });
  });

  afterAll(async () => {
    client.disconnect();
    admin.disconnect();
  });

  /** Every way into a store, each of which must refuse `input` the same way. */
  function entryPoints(input: DecideInput, isStoreOnly = false): [string, () => unknown][] {
    const entries: [string, () => unknown][] = [
      ["MemoryStore.decideSync", () => memoryStore.decideSync(input)],
      ["MemoryStore.peekSync", () => memoryStore.peekSync(input)],
      [
        "decideLayered",
        () => {
          const states = Array.isArray(input.checks) ? input.checks.map(() => undefined) : [];
          return decideLayered(states, input.checks, T0, input.cost === undefined ? 1 : input.cost);
        },
      ],
      ["RedisStore.decide", () => redisStore.decide(input)],
      ["RedisStore.peek", () => redisStore.peek(input)],
    ];
    return isStoreOnly ? entries.filter(([entry]) => entry !== "decideLayered") : entries;
  }

  async function expectRefused(
    input: DecideInput,
    error: typeof TypeError | typeof RangeError,
    field: RegExp,
    isStoreOnly = false,
  ): Promise<void> {
    for (const [entry, call] of entryPoints(input, isStoreOnly)) {
      let thrown: unknown;
      try {
        await call();
      } catch (caught: unknown) {
        thrown = caught;
      }
      expect(thrown, entry).toBeInstanceOf(error);
      expect(String(thrown), entry).toMatch(field);
    }
    expect(await admin.ping()).toBe("PONG");
  }

  it.each(BAD_LIMITS)("a limit with $name is refused, naming the field", async (bad) => {
    const input = { subject: subject(), checks: [check({ limit: bad.limit })] };
    await expectRefused(input, bad.error, bad.field);
    expect(() => memoryStore.consumeSync(input.subject, "account", bad.limit)).toThrow(bad.error);
    // Nothing was written by the refused call.
    expect(
      memoryStore.peekSync({ subject: input.subject, checks: [check()], cost: 0 }).remaining,
    ).toBe(20);
    expect(await admin.exists(redisStore.subjectKey(input.subject))).toBe(0);
    expect(await admin.exists(redisStore.logKey(input.subject, "account"))).toBe(0);
  });

  it.each(BAD_REQUESTS)("a request with $name is refused, naming the field", async (bad) => {
    await expectRefused(bad.input, bad.error, bad.field, bad.isStoreOnly);
  });

  it.each([
    { name: "maxQueue 1e308", limit: { maxQueue: 1e308 }, field: /maxQueue/, error: RangeError },
    { name: "maxQueue NaN", limit: { maxQueue: Number.NaN }, field: /maxQueue/, error: RangeError },
    { name: "drainPerSec 0", limit: { drainPerSec: 0 }, field: /drainPerSec/, error: RangeError },
    {
      name: "drainPerSec 1e-300",
      limit: { drainPerSec: 1e-300 },
      field: /drainPerSec/,
      error: RangeError,
    },
    { name: "maxQueue as a string", limit: { maxQueue: "5" }, field: /maxQueue/, error: TypeError },
  ])("a shaper with $name is refused, naming the field", async ({ limit, field, error }) => {
    const shaper = {
      algorithm: "leaky-shaper",
      maxQueue: 5,
      drainPerSec: 1,
      ...limit,
    } as LeakyShaperLimit;
    expect(() => stepLeakyShaper(undefined, shaper, T0, 1)).toThrow(error);
    expect(() => stepLeakyShaper(undefined, shaper, T0, 1)).toThrow(field);
    await expect(
      redisStore.shape({ subject: subject(), bucket: "queue", limit: shaper }),
    ).rejects.toThrow(field);
    expect(await admin.ping()).toBe("PONG");
  });

  it("a shaper refuses a limit of another algorithm", async () => {
    const limit = GOOD as unknown as LeakyShaperLimit;
    await expect(redisStore.shape({ subject: subject(), bucket: "queue", limit })).rejects.toThrow(
      TypeError,
    );
  });

  it("documented results at the bounds, the same on both stores", async () => {
    const cases: { name: string; limit: LimitSpec; costs: number[] }[] = [
      // A cost no limit can hold is cost-exceeds-capacity, retryAfterMs 0, and consumes nothing.
      { name: "cost 1e308", limit: GOOD, costs: [1e308, 2 ** 53, 2 ** 53 + 2, 1] },
      // The largest size and the fastest rate: whole numbers, no Infinity.
      {
        name: "size 1e15",
        limit: bucket({ capacity: 1e15, refillPerSec: 1e15 }),
        costs: [1e15, 1, 1e15],
      },
      // The longest window: a second request waits about 31.7 years, exactly, not forever.
      { name: "window 1e12 ms", limit: log({ limit: 1, windowMs: 1e12 }), costs: [1, 1] },
      {
        name: "window 0.001 ms",
        limit: windowCounter({ limit: 1, windowMs: 0.001 }),
        costs: [1, 1, 1],
      },
      // The slowest refill the bounds allow for its size: one unit in 1e12 ms.
      {
        name: "rate 1e-9 per second",
        limit: meter({ burst: 1, drainPerSec: 1e-9 }),
        costs: [1, 1],
      },
    ];
    for (const { name, limit, costs } of cases) {
      const at = subject();
      const checks = [check({ limit })];
      for (const cost of costs) {
        const input = { subject: at, checks, cost };
        const fromMemory = memoryStore.decideSync(input);
        const fromRedis = await redisStore.decide(input);
        expect(fromRedis, `${name}, cost ${cost}`).toEqual(fromMemory);
        expectFinite(fromMemory, `${name}, cost ${cost}`);
      }
    }
    const huge = memoryStore.decideSync({ subject: subject(), checks: [check()], cost: 1e308 });
    expect(huge).toMatchObject({
      allowed: false,
      reason: "cost-exceeds-capacity",
      retryAfterMs: 0,
    });
    expect(await admin.ping()).toBe("PONG");
  });

  it("times at ±2^52 ms are decided; beyond them the time is refused", async () => {
    for (const nowMs of [2 ** 52, -(2 ** 52)]) {
      const edge = new ManualClock(nowMs);
      const memory = new MemoryStore({ clock: edge });
      const redis = new RedisStore({ client, keyPrefix: prefix, clock: edge });
      const input = {
        subject: subject(),
        checks: [check({ limit: log({ limit: 1, windowMs: 1e12 }) })],
      };
      for (let i = 0; i < 2; i++) {
        const decision = memory.decideSync(input);
        expect(await redis.decide(input)).toEqual(decision);
        expectFinite(decision, String(nowMs));
      }
    }
    for (const nowMs of [2 ** 52 + 1, 2 ** 53, Number.NaN]) {
      const beyond = new ManualClock(nowMs);
      const input = { subject: subject(), checks: [check()] };
      expect(() => new MemoryStore({ clock: beyond }).decideSync(input)).toThrow(/nowMs/);
      await expect(
        new RedisStore({ client, keyPrefix: prefix, clock: beyond }).decide(input),
      ).rejects.toThrow(/nowMs/);
    }
  });

  it("every key's TTL is bounded by twice its real reset plus the 1 s margin, on Redis's clock", async () => {
    const store = new RedisStore({ client, keyPrefix: prefix }); // Redis TIME: production expiry
    const cases: { limit: LimitSpec; cost: number; resetMs: number }[] = [
      { limit: bucket({ capacity: 20, refillPerSec: 10 }), cost: 20, resetMs: 2 * SECOND_MS },
      { limit: meter({ burst: 10, drainPerSec: 1 }), cost: 10, resetMs: 10 * SECOND_MS },
      { limit: fixed({ limit: 5, windowMs: 60_000 }), cost: 1, resetMs: 60_000 },
      { limit: windowCounter({ limit: 5, windowMs: 60_000 }), cost: 1, resetMs: 120_000 },
      { limit: log({ limit: 1, windowMs: 1e12 }), cost: 1, resetMs: 1e12 },
      { limit: bucket({ capacity: 1e9, refillPerSec: 1_000 }), cost: 1e9, resetMs: 1e9 },
    ];
    for (const { limit, cost, resetMs } of cases) {
      const at = subject();
      const decision = await store.decide({ subject: at, checks: [check({ limit })], cost });
      // Durations round up to whole milliseconds, and instants on today's epoch carry 2^-12 ms.
      expect(decision.resetAfterMs).toBeLessThanOrEqual(resetMs + 1);
      // A sliding log's key lives its reset plus the margin; the subject's hash twice that, of
      // what was written when its TTL was set (so that most writes need not set it again).
      const isLog = limit.algorithm === "sliding-log";
      const ttlMs = await admin.pttl(isLog ? store.logKey(at, "account") : store.subjectKey(at));
      expect(ttlMs, limit.algorithm).toBeGreaterThan(0);
      expect(ttlMs, limit.algorithm).toBeLessThanOrEqual((isLog ? 1 : 2) * (resetMs + 1 + 1_000));
    }
  });

  it("the script refuses out-of-bounds values sent to it directly, and Redis stays responsive", async () => {
    const key = `${prefix}rl2:{direct}`;
    const refused = [
      "2 20 1e25 e account", // sliding log, a window of 1e25 ms (used to loop for ever)
      "5 20 1e-300 e account", // leaky meter draining once per 1e290 years
      "4 1e308 10 e account", // capacity 1e308 (used to reply "inf")
      "4 20 inf e account",
      "4 20 nan e account",
      "1 20 0 e account",
      "4 20 10 x account", // neither enforce nor dry-run
    ];
    for (const checkArg of refused) {
      await expect(
        client.eval(REDIS_DECIDE_LUA, 1, key, "1000", "d - 1 1", checkArg),
      ).rejects.toThrow(/invalid check/);
      expect(await admin.ping()).toBe("PONG");
    }
    for (const head of ["d - inf 1", "d - -1 1", "d 1e300 1 1", "d nan 1 1"]) {
      await expect(
        client.eval(REDIS_DECIDE_LUA, 1, key, "1000", head, "4 20 10 e account"),
      ).rejects.toThrow(/invalid (cost|time)/);
    }
    expect(await admin.exists(key)).toBe(0);
    expect(await admin.ping()).toBe("PONG");
  });
});

function expectFinite(decision: LayeredDecision, label: string): void {
  for (const value of [
    decision.limit,
    decision.remaining,
    decision.retryAfterMs,
    decision.resetAfterMs,
  ]) {
    expect(Number.isFinite(value), label).toBe(true);
    expect(value, label).toBeGreaterThanOrEqual(0);
  }
  expect(decision.retryAfterMs, label).toBeLessThanOrEqual(2 * LIMIT_BOUNDS.maxDurationMs);
}
