import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  CONCURRENCY_EXCEEDED_TYPE,
  concurrencyRejection,
  withConcurrencyLimit,
} from "../src/enforcer/concurrency-middleware";
import {
  createOutboundLimiter,
  OutboundError,
  type OutboundErrorCode,
  type OutboundLimiter,
} from "../src/enforcer/outbound-limiter";
import { ManualClock } from "../src/limiter/clock";
import { RedisOutboundStore } from "../src/limiter/stores/redis-outbound";
import type { TOutboundBudgetInput, TSnapshotOutboundBudget } from "../src/policy/schemas";
import { waitFor } from "../src/testing/wait-for";
import { readyRedis } from "./support/redis";

/*
 * The waiting API on the real Redis, in one process: the order of turns, what an abort and a
 * deadline charge (nothing), hostile input, and concurrency slots (release, late release, expiry,
 * renewal). Turns are compared in Redis time, which the store returns: no wall-clock assertion.
 */

const TEN_SECONDS_MS = 10_000;

/** One token every 10 s, burst 1: every turn after the first is 10 s after the one before. */
const SLOW: TOutboundBudgetInput = {
  name: "slow",
  limit: { algorithm: "token-bucket", capacity: 1, refillPerSec: 0.1 },
  maxWaitMs: 60_000,
  keyBy: "account",
};
const HOSTS: TOutboundBudgetInput = {
  name: "crawl",
  limit: { algorithm: "sliding-window", limit: 5, windowMs: 1_000 },
  keyBy: "host",
};
const SINGLE: TOutboundBudgetInput = {
  name: "mail",
  limit: { algorithm: "fixed-window", limit: 100, windowMs: 60_000 },
};
const SLOTS: TOutboundBudgetInput = {
  name: "slots",
  limit: { algorithm: "token-bucket", capacity: 1_000, refillPerSec: 1_000 },
  concurrency: { max: 2, slotTtlMs: 600 },
  maxWaitMs: 10_000,
  keyBy: "account",
};

const GLOBAL_CAP: TOutboundBudgetInput = {
  name: "global",
  limit: null,
  concurrency: { max: 1 },
  maxWaitMs: 0,
};

let redis: Redis;
let prefix: string;
let limiter: OutboundLimiter;
let store: RedisOutboundStore;
let run = 0;

beforeAll(async () => {
  redis = await readyRedis("control");
  prefix = `${inject("redisKeyPrefix")}outbound:`;
  limiter = createOutboundLimiter({
    client: redis,
    keyPrefix: prefix,
    budgets: [SLOW, HOSTS, SINGLE, SLOTS, GLOBAL_CAP],
  });
  store = new RedisOutboundStore({ client: redis, keyPrefix: prefix });
});

afterAll(async () => {
  limiter.close();
  await redis.quit();
});

/** A key no other test uses. */
function freshKey(): string {
  run += 1;
  return `acct-${Date.now().toString(36)}-${run}`;
}

async function rejection(promise: Promise<unknown>): Promise<OutboundError> {
  try {
    await promise;
  } catch (error: unknown) {
    if (error instanceof OutboundError) return error;
    throw error;
  }
  throw new Error("expected an OutboundError, got a permit");
}

async function keysUnder(pattern: string): Promise<string[]> {
  return redis.keys(`${prefix}${pattern}`);
}

describe("turns", () => {
  it("are given in the order calls reach Redis, one refill apart", async () => {
    const key = freshKey();
    const limit = { algorithm: "token-bucket", capacity: 1, refillPerSec: 0.1 } as const;
    const subject = `o:slow:${key}`;
    const turns: number[] = [];
    for (let i = 0; i < 5; i++) {
      const turn = await store.takeTurn(subject, limit, 1, 60_000);
      expect(turn.status).toBe("turn");
      turns.push(turn.turnAtMs);
    }
    for (let i = 1; i < turns.length; i++) {
      const gap = (turns[i] ?? 0) - (turns[i - 1] ?? 0);
      expect(Math.abs(gap - TEN_SECONDS_MS)).toBeLessThanOrEqual(1);
    }
  });

  it("a wait past maxWaitMs rejects at once and charges nothing", async () => {
    const key = freshKey();
    const first = await limiter.acquire("outbound:slow", { key });
    expect(first.waitedMs).toBeGreaterThanOrEqual(0);
    const late = await rejection(limiter.acquire("outbound:slow", { key, maxWaitMs: 5_000 }));
    expect(late.code).toBe<OutboundErrorCode>("max-wait");
    expect(late.message).toMatch(
      /^outbound:slow: the earliest turn is \d+ ms away, past the wait of 5000 ms; nothing was charged$/,
    );
    // A retry estimate: the earliest turn, one refill (10 s) after the first.
    expect(late.retryAfterMs).toBeGreaterThan(5_000);
    expect(late.retryAfterMs).toBeLessThanOrEqual(TEN_SECONDS_MS);
    // Had the late caller been charged, the next turn would be 20 s after the first.
    const next = await store.takeTurn(`o:slow:${key}`, SLOW.limit as never, 1, 60_000);
    expect(
      Math.abs(next.turnAtMs - (first.turnAtMs ?? Number.NaN) - TEN_SECONDS_MS),
    ).toBeLessThanOrEqual(1);
  });

  it("an aborted wait gives its turn to the next caller and rejects with the abort's reason", async () => {
    const key = freshKey();
    const subject = `o:slow:${key}`;
    const first = await limiter.acquire("outbound:slow", { key });
    const controller = new AbortController();
    const waiting = rejection(limiter.acquire("outbound:slow", { key, signal: controller.signal }));
    // The waiter has its turn once the key's last turn moved past the first.
    await waitFor("the waiter's turn", async () => {
      const last = await redis.hget(`${prefix}ob:{${subject}}:t`, "t");
      return last !== null && Number(last) > (first.turnAtMs ?? Number.NaN) ? true : undefined;
    });
    const reason = new Error("shutting down");
    controller.abort(reason);
    const aborted = await waiting;
    expect(aborted.code).toBe<OutboundErrorCode>("aborted");
    expect(aborted.message).toBe("outbound:slow: the wait was aborted; nothing was charged");
    expect(aborted.cause).toBe(reason);
    // The next caller takes the freed turn (10 s after the first), the one after it 20 s.
    const taken = await store.takeTurn(subject, SLOW.limit as never, 1, 60_000);
    const after = await store.takeTurn(subject, SLOW.limit as never, 1, 60_000);
    expect(
      Math.abs(taken.turnAtMs - (first.turnAtMs ?? Number.NaN) - TEN_SECONDS_MS),
    ).toBeLessThanOrEqual(1);
    expect(
      Math.abs(after.turnAtMs - (first.turnAtMs ?? Number.NaN) - 2 * TEN_SECONDS_MS),
    ).toBeLessThanOrEqual(1);
  });

  it("an already aborted signal rejects before anything is asked of Redis", async () => {
    const key = freshKey();
    const controller = new AbortController();
    controller.abort();
    const aborted = await rejection(
      limiter.acquire("outbound:slow", { key, signal: controller.signal }),
    );
    expect(aborted.code).toBe<OutboundErrorCode>("aborted");
    expect(await keysUnder(`*${key}*`)).toEqual([]);
  });

  it("schedule charges every attempt: a retry waits for a turn of its own", async () => {
    const key = freshKey();
    let attempts = 0;
    const error = await limiter
      .schedule(
        "outbound:slow",
        key,
        async () => {
          attempts += 1;
          throw new Error("provider failed");
        },
        { retries: 1, maxWaitMs: 5_000 },
      )
      .catch((thrown: unknown) => thrown);
    // The first attempt ran at once; the retry needed a second turn, 10 s away: past the wait.
    expect(attempts).toBe(1);
    expect(error).toBeInstanceOf(OutboundError);
    expect((error as OutboundError).code).toBe<OutboundErrorCode>("max-wait");
  });
});

describe("hostile input to acquire", () => {
  const MEGABYTE_KEY = "a".repeat(1024 * 1024);
  const cases: readonly {
    name: string;
    scope: unknown;
    options: Record<string, unknown>;
    code: OutboundErrorCode;
    message: RegExp;
  }[] = [
    {
      name: "NaN cost",
      scope: "outbound:slow",
      options: { key: "a", cost: Number.NaN },
      code: "invalid-argument",
      message: /^outbound:slow: cost must be a whole number from 1 to 1000000, not NaN$/,
    },
    {
      name: "a fractional cost",
      scope: "outbound:slow",
      options: { key: "a", cost: 1.5 },
      code: "invalid-argument",
      message: /cost must be a whole number from 1 to 1000000, not 1.5$/,
    },
    {
      name: "cost 0",
      scope: "outbound:slow",
      options: { key: "a", cost: 0 },
      code: "invalid-argument",
      message: /cost must be a whole number from 1 to 1000000, not 0$/,
    },
    {
      name: "a negative wait",
      scope: "outbound:slow",
      options: { key: "a", maxWaitMs: -1 },
      code: "invalid-argument",
      message: /^outbound:slow: maxWaitMs must be a finite number of ms from 0, not -1$/,
    },
    {
      name: "an infinite wait",
      scope: "outbound:slow",
      options: { key: "a", maxWaitMs: Number.POSITIVE_INFINITY },
      code: "invalid-argument",
      message: /maxWaitMs must be a finite number of ms from 0, not Infinity$/,
    },
    {
      name: "a wait beyond the budget's",
      scope: "outbound:slow",
      options: { key: "a", maxWaitMs: 60_001 },
      code: "invalid-argument",
      message: /maxWaitMs must be at most the budget's maxWaitMs 60000, not 60001$/,
    },
    {
      name: "an unknown scope",
      scope: "outbound:sendgrid",
      options: {},
      code: "unknown-scope",
      message:
        /^outbound:sendgrid: no outbound budget has this scope \(known: outbound:slow, outbound:crawl, outbound:mail, outbound:slots, outbound:global\)$/,
    },
    {
      name: "an inbound scope",
      scope: "tier:pro",
      options: {},
      code: "unknown-scope",
      message: /^tier:pro: no outbound budget has this scope/,
    },
    {
      name: "a scope that is not text",
      scope: 42,
      options: {},
      code: "invalid-argument",
      message: /^42: scope must be text, not 42$/,
    },
    {
      name: "a key of 1 MB",
      scope: "outbound:slow",
      options: { key: MEGABYTE_KEY },
      code: "invalid-argument",
      message: /^outbound:slow: key must be at most 255 characters, got 1048576$/,
    },
    {
      name: "a key of 1 MB on a host budget",
      scope: "outbound:crawl",
      options: { key: MEGABYTE_KEY },
      code: "invalid-argument",
      message: /key must be at most 255 characters, got 1048576$/,
    },
    {
      name: "a host that is not a host",
      scope: "outbound:crawl",
      options: { key: "Example.com/path" },
      code: "invalid-argument",
      message: /key must be a lower-case host name .* not "Example.com\/path"$/,
    },
    {
      name: "a key on a single budget",
      scope: "outbound:mail",
      options: { key: "x" },
      code: "invalid-argument",
      message: /key must be empty: this budget is keyed by nothing \(keyBy single\)$/,
    },
    {
      name: "a key that is not text",
      scope: "outbound:slow",
      options: { key: 7 },
      code: "invalid-argument",
      message: /key must be text, not number$/,
    },
    {
      name: "a signal that is not an AbortSignal",
      scope: "outbound:slow",
      options: { key: "a", signal: { aborted: false } },
      code: "invalid-argument",
      message: /signal must be an AbortSignal, not a value of type object$/,
    },
    {
      name: "a cost the limit can never admit",
      scope: "outbound:slow",
      options: { key: "hostile-cost", cost: 2 },
      code: "cost-exceeds-limit",
      message: /^outbound:slow: cost 2 exceeds what the limit can ever admit at once$/,
    },
  ];

  it.each(cases)("$name: $code", async ({ scope, options, code, message }) => {
    const before = await keysUnder("*");
    const error = await rejection(limiter.acquire(scope as string, options as never));
    expect(error.code).toBe(code);
    expect(error.message).toMatch(message);
    expect(error.message.length).toBeLessThan(400);
    // Nothing written: no key appeared (the cost case peeks only).
    expect(await keysUnder("*")).toEqual(before);
  });

  it("a budget of the live policy is read on every acquire and wins over one in code", async () => {
    // What an enforcer's `outboundBudget` returns as the console changes the policy.
    let published: TSnapshotOutboundBudget | null = null;
    const live = createOutboundLimiter({
      client: redis,
      keyPrefix: prefix,
      budgets: [{ ...SINGLE, name: "live" }],
      policy: { outboundBudget: (name) => (name === "live" ? published : null) },
    });
    try {
      const key = freshKey();
      expect(live.budgetOf("outbound:live").limit).toEqual(SINGLE.limit);
      published = {
        name: "live",
        limit: { algorithm: "token-bucket", capacity: 1, refillPerSec: 0.1 },
        concurrency: null,
        maxWaitMs: 60_000,
        keyBy: "account",
      };
      const first = await live.acquire("outbound:live", { key });
      const late = await rejection(live.acquire("outbound:live", { key, maxWaitMs: 1_000 }));
      expect(first.turnAtMs).not.toBeNull();
      expect(late.code).toBe<OutboundErrorCode>("max-wait");
      published = null;
      const unknown = await rejection(live.acquire("outbound:other", { key }));
      expect(unknown.message).toBe(
        "outbound:other: no outbound budget has this scope (known: outbound:live; nor has the policy in force)",
      );
    } finally {
      live.close();
    }
  });

  it("a published raise applies until its expiry by the wall clock, then the base, with no new version", async () => {
    const wall = new ManualClock(Date.parse("2026-03-01T12:00:00.000Z"));
    // Two per hour, raised to five for ten minutes: the same snapshot throughout.
    const published: TSnapshotOutboundBudget = {
      name: "raised",
      limit: { algorithm: "fixed-window", limit: 2, windowMs: 3_600_000 },
      concurrency: null,
      maxWaitMs: 0,
      keyBy: "account",
      raise: {
        limit: { algorithm: "fixed-window", limit: 5, windowMs: 3_600_000 },
        concurrencyMax: null,
        startsAt: new Date(wall.nowMs() - 1_000).toISOString(),
        expiresAt: new Date(wall.nowMs() + 600_000).toISOString(),
      },
    };
    const live = createOutboundLimiter({
      client: redis,
      keyPrefix: prefix,
      policy: { outboundBudget: (name) => (name === "raised" ? published : null) },
      wallClock: wall,
    });
    try {
      const raisedKey = freshKey();
      for (let call = 0; call < 5; call++)
        await live.acquire("outbound:raised", { key: raisedKey });
      const over = await rejection(live.acquire("outbound:raised", { key: raisedKey }));
      expect(over.code).toBe<OutboundErrorCode>("max-wait");
      expect(live.budgetOf("outbound:raised").limit).toMatchObject({ limit: 5 });

      wall.advance(600_000);
      expect(live.budgetOf("outbound:raised").limit).toMatchObject({ limit: 2 });
      const baseKey = freshKey();
      for (let call = 0; call < 2; call++) await live.acquire("outbound:raised", { key: baseKey });
      const third = await rejection(live.acquire("outbound:raised", { key: baseKey }));
      expect(third.code).toBe<OutboundErrorCode>("max-wait");
    } finally {
      live.close();
    }
  });

  it("a bad budget is refused by the constructor, naming the field", () => {
    expect(() =>
      createOutboundLimiter({
        client: redis,
        keyPrefix: prefix,
        budgets: [{ ...SLOW, maxWaitMs: -5 }, SLOW],
      }),
    ).toThrow(/budgets\[0\]\.maxWaitMs: maxWaitMs must be at least 0/);
    expect(() =>
      createOutboundLimiter({ client: redis, keyPrefix: prefix, budgets: [SLOW, SLOW] }),
    ).toThrow(/budgets\[1\]\.name: budget "slow" is defined twice/);
  });
});

describe("concurrency slots", () => {
  it("cap in-flight permits; a release frees one slot once, never twice", async () => {
    const key = freshKey();
    const a = await limiter.acquire("outbound:slots", { key });
    const b = await limiter.acquire("outbound:slots", { key });
    expect([a.hasSlot, b.hasSlot]).toEqual([true, true]);
    const full = await rejection(limiter.acquire("outbound:slots", { key, maxWaitMs: 0 }));
    expect(full.code).toBe<OutboundErrorCode>("max-wait");
    expect(full.message).toBe(
      "outbound:slots: all 2 concurrency slots stayed taken for the whole wait; nothing was charged",
    );
    expect(await a.release()).toBe(true);
    expect(await a.release()).toBe(false);
    const c = await limiter.acquire("outbound:slots", { key, maxWaitMs: 0 });
    // a's second release did not free c's (or b's) slot: the set still holds two.
    expect(await redis.zcard(`${prefix}ob:{o:slots:${key}}:s`)).toBe(2);
    await Promise.all([b.release(), c.release()]);
    expect(await redis.zcard(`${prefix}ob:{o:slots:${key}}:s`)).toBe(0);
  });

  it("a waiter takes the slot a release in this process frees", async () => {
    const key = freshKey();
    const held = [
      await limiter.acquire("outbound:slots", { key }),
      await limiter.acquire("outbound:slots", { key }),
    ];
    const waiter = limiter.acquire("outbound:slots", { key });
    await held[0]?.release();
    const permit = await waiter;
    expect(permit.hasSlot).toBe(true);
    await Promise.all([held[1]?.release(), permit.release()]);
  });

  it("an unrenewed slot expires, and its late release frees nothing of the next holder's", async () => {
    const key = freshKey();
    const lapsing = createOutboundLimiter({
      client: redis,
      keyPrefix: prefix,
      budgets: [SLOTS],
      isRenewing: false,
    });
    const stale = [
      await lapsing.acquire("outbound:slots", { key }),
      await lapsing.acquire("outbound:slots", { key }),
    ];
    // Both slots lapse after their TTL; then two new holders get them.
    // The two lapse a few ms apart: a poll between them gets one slot, which it gives back.
    const fresh = await waitFor("the lapsed slots", async () => {
      const settled = await Promise.allSettled([
        limiter.acquire("outbound:slots", { key, maxWaitMs: 0 }),
        limiter.acquire("outbound:slots", { key, maxWaitMs: 0 }),
      ]);
      const permits = settled.flatMap((result) =>
        result.status === "fulfilled" ? [result.value] : [],
      );
      if (permits.length === settled.length) return permits;
      await Promise.all(permits.map((permit) => permit.release()));
      return undefined;
    });
    expect(await Promise.all(stale.map((permit) => permit.release()))).toEqual([false, false]);
    expect(await redis.zcard(`${prefix}ob:{o:slots:${key}}:s`)).toBe(2);
    expect(Number(await redis.hget(`${prefix}ob:{o:slots:${key}}:x`, "expired"))).toBe(2);
    await Promise.all(fresh.map((permit) => permit.release()));
    lapsing.close();
  });

  it("a renewed slot outlives its TTL while its holder works", async () => {
    const key = freshKey();
    const held = [
      await limiter.acquire("outbound:slots", { key }),
      await limiter.acquire("outbound:slots", { key }),
    ];
    // Four TTLs of waiting: without renewal both slots would have lapsed long before.
    const starved = await rejection(limiter.acquire("outbound:slots", { key, maxWaitMs: 2_400 }));
    expect(starved.code).toBe<OutboundErrorCode>("max-wait");
    expect(held.map((permit) => permit.isSlotLost())).toEqual([false, false]);
    expect(await Promise.all(held.map((permit) => permit.release()))).toEqual([true, true]);
  });

  it("a detached slot is the remote holder's: the permit no longer renews or frees it; renewSlot and releaseSlot do, once", async () => {
    const key = freshKey();
    const permit = await limiter.acquire("outbound:slots", { key });
    const slot = permit.detachSlot();
    expect(slot).toEqual({ id: expect.stringMatching(/^[0-9a-f]{24}$/), ttlMs: 600 });
    if (slot === null) throw new Error("no slot");
    expect(permit.detachSlot()).toBeNull();
    expect(await permit.release()).toBe(false);
    expect(await redis.zcard(`${prefix}ob:{o:slots:${key}}:s`)).toBe(1);
    expect(await limiter.renewSlot("outbound:slots", key, slot.id)).toEqual(slot);
    const other = await limiter.acquire("outbound:slots", { key });
    expect(await limiter.releaseSlot("outbound:slots", key, slot.id)).toBe(true);
    expect(await limiter.releaseSlot("outbound:slots", key, slot.id)).toBe(false);
    expect(await limiter.renewSlot("outbound:slots", key, slot.id)).toBeNull();
    // The other holder's slot stays taken.
    expect(await redis.zcard(`${prefix}ob:{o:slots:${key}}:s`)).toBe(1);
    expect(await other.release()).toBe(true);
  });

  it("a detached slot nobody renews lapses after its TTL", async () => {
    const key = freshKey();
    const held = await Promise.all([
      limiter.acquire("outbound:slots", { key }),
      limiter.acquire("outbound:slots", { key }),
    ]);
    const detached = held.map((permit) => permit.detachSlot());
    const next = await limiter.acquire("outbound:slots", { key, maxWaitMs: 5_000 });
    expect(next.hasSlot).toBe(true);
    const lost = await Promise.all(
      detached.map((slot) => limiter.renewSlot("outbound:slots", key, slot?.id ?? "")),
    );
    expect(lost.filter((slot) => slot === null).length).toBeGreaterThanOrEqual(1);
    await next.release();
  });

  it("renewSlot and releaseSlot refuse a bad slot id, a bad key and a budget without slots", async () => {
    const cases: [string, string, string, RegExp][] = [
      ["outbound:slots", "acct-1", "zz", /slot must be the id acquire gave \(24 hex characters\)/],
      ["outbound:slots", "not an account!", "0".repeat(24), /key must be 1 to 128 characters/],
      ["outbound:slow", "acct-1", "0".repeat(24), /this budget has no concurrency cap/],
    ];
    for (const [scope, key, slotId, message] of cases) {
      for (const call of [limiter.renewSlot, limiter.releaseSlot]) {
        const error = await rejection(call(scope, key, slotId));
        expect(error.code).toBe<OutboundErrorCode>("invalid-argument");
        expect(error.message).toMatch(message);
      }
    }
  });
});

describe("in-flight caps for Fetch handlers", () => {
  async function heldSlots(): Promise<number> {
    return redis.zcard(`${prefix}ob:{o:global:}:s`);
  }

  it("hold the slot until the body is read to its end; a second request meanwhile gets 503", async () => {
    let push: (text: string | null) => void = () => {};
    const handler = withConcurrencyLimit(
      limiter,
      { scope: "outbound:global", key: () => "" },
      () => {
        const body = new ReadableStream<Uint8Array>({
          start(controller) {
            push = (text) => {
              if (text === null) controller.close();
              else controller.enqueue(new TextEncoder().encode(text));
            };
          },
        });
        return new Response(body, { status: 200 });
      },
    );
    const first = await handler(new Request("http://gateway/a"));
    expect(await heldSlots()).toBe(1);
    const refused = await handler(new Request("http://gateway/b"));
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(refused.headers.get("ratelimit-policy")).toBe(
      '"outbound:global";q=1;qu="concurrent-requests"',
    );
    expect(await refused.json()).toMatchObject({ type: CONCURRENCY_EXCEEDED_TYPE, status: 503 });
    push("hello");
    push(null);
    expect(await first.text()).toBe("hello");
    await waitFor("the slot freed", async () => ((await heldSlots()) === 0 ? true : undefined));
  });

  it("free the slot when the client cancels the body, and when the handler throws", async () => {
    const streaming = withConcurrencyLimit(
      limiter,
      { scope: "outbound:global", key: () => "" },
      () => new Response(new ReadableStream<Uint8Array>({ pull() {} }), { status: 200 }),
    );
    const response = await streaming(new Request("http://gateway/a"));
    expect(await heldSlots()).toBe(1);
    await response.body?.cancel();
    await waitFor("the slot freed", async () => ((await heldSlots()) === 0 ? true : undefined));
    const failing = withConcurrencyLimit(
      limiter,
      { scope: "outbound:global", key: () => "" },
      () => {
        throw new Error("handler failed");
      },
    );
    await expect(failing(new Request("http://gateway/a"))).rejects.toThrow("handler failed");
    expect(await heldSlots()).toBe(0);
  });

  it("refuse a budget without a concurrency cap", () => {
    expect(() =>
      withConcurrencyLimit(
        limiter,
        { scope: "outbound:slow", key: () => "a" },
        () => new Response(),
      ),
    ).toThrow("outbound:slow: a concurrency limit needs a budget with a concurrency cap");
  });

  it("answer 429 for a per-client cap and 503 for a cap keyed by nothing", () => {
    expect(concurrencyRejection("outbound:slots", limiter.budgetOf("outbound:slots")).status).toBe(
      429,
    );
    expect(
      concurrencyRejection("outbound:global", limiter.budgetOf("outbound:global")).status,
    ).toBe(503);
  });
});
