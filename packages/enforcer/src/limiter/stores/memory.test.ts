import { afterEach, describe, expect, it, vi } from "vitest";
import { ManualClock } from "../clock";
import { decideLayered } from "../layered";
import type { LimitState } from "../step-limit";
import type { DecideInput, LimitCheck, LimitSpec } from "../types";
import { MemoryStore } from "./memory";

const T0 = 1_700_000_000_000;

/** A bucket that does not refill within any test: consumption stays visible. */
const SLOW: LimitSpec = { algorithm: "token-bucket", capacity: 3, refillPerSec: 0.000_001 };

function input(subject: string, ...checks: LimitCheck[]): DecideInput {
  return {
    subject,
    checks: checks.length > 0 ? checks : [{ scope: "api", limit: SLOW, mode: "enforce" }],
  };
}

function remaining(store: MemoryStore, subject: string): number {
  return store.peekSync({ ...input(subject), cost: 0 }).remaining;
}

describe("MemoryStore: bounded keys", () => {
  it("evicts the least recently used key, which then starts full", () => {
    const store = new MemoryStore({ clock: new ManualClock(T0), maxKeys: 3 });
    for (const subject of ["a", "b", "c"]) store.decideSync(input(subject));
    store.decideSync(input("a")); // a is now the most recent; b the least
    store.decideSync(input("d"));
    expect(store.keyCount).toBe(3);
    expect(remaining(store, "a")).toBe(1);
    expect(remaining(store, "b")).toBe(3);
    expect(remaining(store, "c")).toBe(2);
    expect(remaining(store, "d")).toBe(2);
  });

  it("stays within maxKeys under a flood of unique keys and keeps the most recent ones", () => {
    const store = new MemoryStore({ clock: new ManualClock(T0), maxKeys: 1000 });
    for (let i = 0; i < 20_000; i++) store.decideSync(input(`flood-${i}`));
    expect(store.keyCount).toBe(1000);
    expect(remaining(store, "flood-19999")).toBe(2);
    expect(remaining(store, "flood-19000")).toBe(2);
    expect(remaining(store, "flood-18999")).toBe(3);
  });

  it("keeps every algorithm's state intact as the slab grows past its first allocation", () => {
    const store = new MemoryStore({ clock: new ManualClock(T0), maxKeys: 10_000 });
    const checks: LimitCheck[] = [
      {
        scope: "fw",
        limit: { algorithm: "fixed-window", limit: 5, windowMs: 60_000 },
        mode: "enforce",
      },
      {
        scope: "log",
        limit: { algorithm: "sliding-log", limit: 5, windowMs: 60_000 },
        mode: "enforce",
      },
      {
        scope: "sw",
        limit: { algorithm: "sliding-window", limit: 5, windowMs: 60_000 },
        mode: "enforce",
      },
      { scope: "tb", limit: SLOW, mode: "enforce" },
      {
        scope: "lm",
        limit: { algorithm: "leaky-meter", burst: 5, drainPerSec: 0.000_001 },
        mode: "enforce",
      },
    ];
    for (let i = 0; i < 2000; i++)
      store.decideSync({ subject: `s${i}`, checks, cost: 1 + (i % 3) });
    expect(store.keyCount).toBe(10_000);
    for (let i = 0; i < 2000; i += 97) {
      const outcomes = store.peekSync({ subject: `s${i}`, checks, cost: 0 }).outcomes;
      const left = { 0: [4, 4, 4, 2, 4], 1: [3, 3, 3, 1, 3], 2: [2, 2, 2, 0, 2] }[i % 3];
      expect(outcomes.map((o) => o.remaining)).toEqual(left);
    }
  });

  it("a decision's own keys are never evicted to make room for its new keys", () => {
    const store = new MemoryStore({ clock: new ManualClock(T0), maxKeys: 2 });
    const account: LimitCheck = { scope: "account", limit: SLOW, mode: "enforce" };
    const endpoint: LimitCheck = { scope: "endpoint", limit: SLOW, mode: "enforce" };
    store.decideSync(input("x", account)); // x/account is the oldest key
    store.decideSync(input("y", account));
    store.decideSync(input("x", endpoint, account)); // the new key must not evict x/account
    expect(store.peekSync({ ...input("x", account), cost: 0 }).remaining).toBe(1);
    expect(store.peekSync({ ...input("x", endpoint), cost: 0 }).remaining).toBe(2);
  });

  it.each([0, 1, 2])(
    "evicting one of a subject's keys keeps its others: evict position %i",
    (position) => {
      const store = new MemoryStore({ clock: new ManualClock(T0), maxKeys: 3 });
      const layers = ["a", "b", "c"].map(
        (scope): LimitCheck => ({ scope, limit: SLOW, mode: "enforce" }),
      );
      for (const [i, layer] of layers.entries()) {
        store.decideSync({ subject: "s", checks: [layer], cost: i + 1 });
      }
      // Use every layer except the one at `position`, then add a key: that layer is evicted.
      for (const [i, layer] of layers.entries()) {
        if (i !== position) store.decideSync({ subject: "s", checks: [layer], cost: 0 });
      }
      store.decideSync(input("other"));
      const left = layers.map(
        (layer) => store.peekSync({ subject: "s", checks: [layer], cost: 0 }).remaining,
      );
      expect(left).toEqual([2, 1, 0].map((value, i) => (i === position ? 3 : value)));
    },
  );

  it("refuses a decision with more checks than it can hold", () => {
    const store = new MemoryStore({ clock: new ManualClock(T0), maxKeys: 1 });
    expect(() =>
      store.decideSync(
        input(
          "x",
          { scope: "a", limit: SLOW, mode: "enforce" },
          { scope: "b", limit: SLOW, mode: "enforce" },
        ),
      ),
    ).toThrow(RangeError);
  });

  it.each([0, -1, 1.5, Number.NaN, 2 ** 31])("refuses maxKeys %s", (maxKeys) => {
    expect(() => new MemoryStore({ maxKeys })).toThrow(RangeError);
  });
});

describe("MemoryStore: peek", () => {
  it("creates no key and does not count as use for eviction", () => {
    const store = new MemoryStore({ clock: new ManualClock(T0), maxKeys: 2 });
    store.peekSync(input("ghost"));
    expect(store.keyCount).toBe(0);
    store.decideSync(input("a"));
    store.decideSync(input("b"));
    store.peekSync(input("a")); // a stays the least recently used
    store.decideSync(input("c"));
    expect(remaining(store, "a")).toBe(3);
    expect(remaining(store, "b")).toBe(2);
  });
});

describe("MemoryStore: time", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("a wall-clock jump changes no decision: durations come from the monotonic clock", () => {
    const store = new MemoryStore();
    const slow: DecideInput = {
      subject: "wall",
      checks: [
        {
          scope: "api",
          limit: { algorithm: "token-bucket", capacity: 1, refillPerSec: 0.001 },
          mode: "enforce",
        },
      ],
    };
    store.decideSync(slow);
    const before = store.decideSync(slow);
    vi.setSystemTime(Date.now() + 86_400_000);
    const afterForward = store.decideSync(slow);
    vi.setSystemTime(Date.now() - 2 * 86_400_000);
    const afterBack = store.decideSync(slow);
    for (const decision of [before, afterForward, afterBack]) {
      expect(decision).toMatchObject({ allowed: false, reason: "limit-exceeded" });
      // A 1000 s wait, shortened only by the real time between these calls.
      expect(decision.retryAfterMs).toBeGreaterThan(900_000);
      expect(decision.retryAfterMs).toBeLessThanOrEqual(1_000_000);
    }
  });
});

describe("MemoryStore: API", () => {
  it("decide resolves to exactly what decideSync decides", async () => {
    const asyncStore = new MemoryStore({ clock: new ManualClock(T0) });
    const syncStore = new MemoryStore({ clock: new ManualClock(T0) });
    for (let i = 0; i < 5; i++) {
      expect(await asyncStore.decide(input("p"))).toEqual(syncStore.decideSync(input("p")));
      expect(await asyncStore.peek(input("p"))).toEqual(syncStore.peekSync(input("p")));
    }
  });

  it("decide and peek reject, rather than throw, on a configuration mistake", async () => {
    const store = new MemoryStore({ clock: new ManualClock(T0) });
    const zeroRate: LimitSpec = { algorithm: "token-bucket", capacity: 1, refillPerSec: 0 };
    const decided = store.decide(input("p", { scope: "api", limit: zeroRate, mode: "enforce" }));
    const peeked = store.peek({ subject: "p", checks: [], cost: Number.NaN });
    await expect(decided).rejects.toThrow(/refillPerSec/);
    await expect(peeked).rejects.toThrow(/cost/);
  });

  it("a bucket whose limit changes algorithm starts afresh", () => {
    const store = new MemoryStore({ clock: new ManualClock(T0) });
    const log: LimitCheck = {
      scope: "api",
      limit: { algorithm: "sliding-log", limit: 2, windowMs: 60_000 },
      mode: "enforce",
    };
    store.decideSync(input("alg", log));
    store.decideSync(input("alg", log));
    expect(store.decideSync(input("alg", log)).allowed).toBe(false);
    const bucket: LimitCheck = {
      scope: "api",
      limit: { algorithm: "token-bucket", capacity: 2, refillPerSec: 1 },
      mode: "enforce",
    };
    expect(store.decideSync(input("alg", bucket))).toMatchObject({ allowed: true, remaining: 1 });
    expect(store.decideSync(input("alg", log))).toMatchObject({ allowed: true, remaining: 1 });
  });
});

describe("MemoryStore: consumeSync, the single-limit fast path", () => {
  const limits: LimitSpec[] = [
    { algorithm: "token-bucket", capacity: 5, refillPerSec: 2 },
    { algorithm: "fixed-window", limit: 4, windowMs: 1_000 },
    { algorithm: "sliding-log", limit: 4, windowMs: 1_000 },
    { algorithm: "sliding-window", limit: 4, windowMs: 1_000 },
    { algorithm: "leaky-meter", burst: 5, drainPerSec: 2 },
  ];

  it.each(limits)("decides exactly as decideSync with one enforced check: $algorithm", (limit) => {
    const fastClock = new ManualClock(1_000_000);
    const layeredClock = new ManualClock(1_000_000);
    const fast = new MemoryStore({ clock: fastClock });
    const layered = new MemoryStore({ clock: layeredClock });
    const check: LimitCheck = { scope: "api", limit, mode: "enforce" };
    // A deterministic mix of bursts, pauses and costs.
    for (let i = 0; i < 200; i++) {
      const stepMs = (i * 37) % 11 === 0 ? 450 : (i * 13) % 7;
      fastClock.advance(stepMs);
      layeredClock.advance(stepMs);
      const cost = i % 9 === 0 ? 2 : 1;
      const expected = layered.decideSync({ subject: "k", checks: [check], cost });
      const actual = fast.consumeSync("k", "api", limit, cost);
      expect(actual).toEqual({
        allowed: expected.allowed,
        limit: expected.limit,
        remaining: expected.remaining,
        retryAfterMs: expected.retryAfterMs,
        resetAfterMs: expected.resetAfterMs,
        reason: expected.reason,
      });
    }
  });

  it("shares the stored state with decideSync and stays within maxKeys", () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore({ clock, maxKeys: 2 });
    const limit: LimitSpec = { algorithm: "token-bucket", capacity: 2, refillPerSec: 0.001 };
    store.consumeSync("a", "api", limit);
    const layered = store.decideSync({
      subject: "a",
      checks: [{ scope: "api", limit, mode: "enforce" }],
    });
    expect(layered.remaining).toBe(0);
    expect(store.consumeSync("a", "api", limit).allowed).toBe(false);
    store.consumeSync("b", "api", limit);
    store.consumeSync("c", "api", limit);
    expect(store.keyCount).toBe(2);
  });
});

describe("MemoryStore: prepared lists and repeated rejections", () => {
  const exhausted: LimitCheck = { scope: "api", limit: SLOW, mode: "enforce" };

  it("a rejection that repeats the last one exactly is the same frozen decision", () => {
    const clock = new ManualClock(T0);
    const store = new MemoryStore({ clock });
    const checks = [exhausted];
    for (let i = 0; i < 3; i++) store.decideSync({ subject: "s", checks });
    const first = store.decideSync({ subject: "s", checks });
    const second = store.decideSync({ subject: "s", checks });
    const third = store.decideSync({ subject: "s", checks });
    expect(first).toEqual(second);
    expect(first).not.toBe(second); // the first was handed out unfrozen: never shared
    expect(third).toBe(second);
    expect(Object.isFrozen(second)).toBe(true);
    expect(Object.isFrozen(second.outcomes)).toBe(true);
    expect(Object.isFrozen(second.outcomes[0])).toBe(true);
    expect(Object.isFrozen(first)).toBe(false);
    // Time moves on: a different rejection, a new object.
    clock.advance(1);
    const later = store.decideSync({ subject: "s", checks });
    expect(later).not.toBe(third);
    expect(later.retryAfterMs).toBe(third.retryAfterMs - 1);
  });

  it("a repeated rejection for one subject is shared with another only when identical", () => {
    const store = new MemoryStore({ clock: new ManualClock(T0) });
    const checks = [exhausted];
    for (let i = 0; i < 3; i++) {
      store.decideSync({ subject: "a", checks });
      store.decideSync({ subject: "b", checks, cost: i === 2 ? 0.5 : 1 });
    }
    const a = [1, 2].map(() => store.decideSync({ subject: "a", checks }));
    const b = store.decideSync({ subject: "b", checks, cost: 1 });
    expect(a[0]).toMatchObject({ allowed: false, remaining: 0 });
    expect(b).toMatchObject({ allowed: false, remaining: 0 });
    expect(b).not.toBe(a[1]); // b holds half a token more: another retryAfterMs
    expect(b.retryAfterMs).toBeLessThan(a[1]?.retryAfterMs ?? 0);
  });

  it("consumeSync shares a repeated rejection the same way, and never an admission", () => {
    const store = new MemoryStore({ clock: new ManualClock(T0) });
    const admitted = [1, 2, 3].map(() => store.consumeSync("s", "api", SLOW));
    expect(new Set(admitted).size).toBe(3);
    const rejected = [1, 2, 3].map(() => store.consumeSync("s", "api", SLOW));
    expect(rejected[0]).toEqual(rejected[1]);
    expect(rejected[0]).not.toBe(rejected[1]);
    expect(rejected[2]).toBe(rejected[1]);
    expect(Object.isFrozen(rejected[2])).toBe(true);
    expect(store.consumeSync("s", "api", SLOW, 4)).toMatchObject({
      reason: "cost-exceeds-capacity",
    });
  });

  it("a list built per request with the same checks decides as the list it repeats", () => {
    const store = new MemoryStore({ clock: new ManualClock(T0) });
    const endpoint: LimitCheck = { scope: "endpoint", limit: SLOW, mode: "enforce" };
    const decisions = [1, 2, 3, 4].map(() =>
      store.decideSync({ subject: "s", checks: [endpoint, exhausted] }),
    );
    expect(decisions.map((decision) => decision.remaining)).toEqual([2, 1, 0, 0]);
    expect(decisions[3]?.allowed).toBe(false);
  });

  it("a list that differs from the last one by a check is validated: a shared bucket throws", () => {
    const store = new MemoryStore({ clock: new ManualClock(T0) });
    const first: LimitCheck = { scope: "a", bucket: "same", limit: SLOW, mode: "enforce" };
    const second: LimitCheck = { scope: "b", bucket: "other", limit: SLOW, mode: "enforce" };
    const clash: LimitCheck = { scope: "c", bucket: "same", limit: SLOW, mode: "enforce" };
    store.decideSync({ subject: "s", checks: [first, second] });
    expect(() => store.decideSync({ subject: "s", checks: [first, clash] })).toThrow(
      /share the bucket "same"/,
    );
    expect(() =>
      store.decideSync({
        subject: "s",
        checks: [first, { ...second, mode: "off" as "enforce" }],
      }),
    ).toThrow(RangeError);
    expect(store.peekSync({ subject: "s", checks: [first], cost: 0 }).remaining).toBe(2);
  });

  it("moves a key between a sliding log and a numeric algorithm, either way, starting afresh", () => {
    const store = new MemoryStore({ clock: new ManualClock(T0), maxKeys: 4 });
    const log: LimitCheck = {
      scope: "api",
      limit: { algorithm: "sliding-log", limit: 2, windowMs: 60_000 },
      mode: "enforce",
    };
    const window: LimitCheck = {
      scope: "api",
      limit: { algorithm: "sliding-window", limit: 5, windowMs: 60_000 },
      mode: "enforce",
    };
    expect(store.decideSync({ subject: "s", checks: [log] }).remaining).toBe(1);
    expect(store.decideSync({ subject: "s", checks: [window] }).remaining).toBe(4);
    expect(store.decideSync({ subject: "s", checks: [window] }).remaining).toBe(3);
    expect(store.decideSync({ subject: "s", checks: [log] }).remaining).toBe(1);
    expect(store.decideSync({ subject: "s", checks: [window] }).remaining).toBe(4);
    expect(store.keyCount).toBe(1);
  });
});

describe("MemoryStore: agrees with the reference store under eviction", () => {
  it("every decision equals a reference store's that forgets the keys the LRU evicted", () => {
    // A tiny bound over many subjects and layered lists of every algorithm: keys are evicted all
    // the time. An evicted key starts afresh, so the reference is rebuilt without it: a store
    // that tracks which keys MemoryStore still holds (the most recently used maxKeys).
    const clock = new ManualClock(T0);
    const maxKeys = 6;
    const store = new MemoryStore({ clock, maxKeys });
    const limits: LimitSpec[] = [
      { algorithm: "token-bucket", capacity: 3, refillPerSec: 5 },
      { algorithm: "leaky-meter", burst: 2, drainPerSec: 3 },
      { algorithm: "fixed-window", limit: 3, windowMs: 700 },
      { algorithm: "sliding-window", limit: 4, windowMs: 900 },
      { algorithm: "sliding-log", limit: 2, windowMs: 500 },
    ];
    const lists: LimitCheck[][] = [
      [{ scope: "a", limit: limits[0] as LimitSpec, mode: "enforce" }],
      [
        { scope: "a", limit: limits[0] as LimitSpec, mode: "enforce" },
        { scope: "b", limit: limits[1] as LimitSpec, mode: "dry-run" },
      ],
      [
        { scope: "c", limit: limits[2] as LimitSpec, mode: "enforce" },
        { scope: "d", limit: limits[3] as LimitSpec, mode: "enforce" },
      ],
      [
        { scope: "d", limit: limits[3] as LimitSpec, mode: "enforce" },
        { scope: "e", limit: limits[4] as LimitSpec, mode: "enforce" },
      ],
      [{ scope: "b", limit: limits[1] as LimitSpec, mode: "enforce" }],
    ];
    // The reference: states by key, in recency order, trimmed to maxKeys after each decision.
    const states = new Map<string, LimitState>();
    let seed = 7;
    const next = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed % n;
    };
    for (let i = 0; i < 3000; i++) {
      clock.advance([0, 0, 1, 37, 250, 1000][next(6)] ?? 0);
      const subject = `s${next(4)}`;
      const checks = lists[next(lists.length)] ?? [];
      const cost = [1, 1, 1, 0, 2][next(5)] ?? 1;
      const keys = checks.map((check) => `${subject}/${check.scope}`);
      const expected = decideLayered(
        keys.map((key) => states.get(key)),
        checks,
        clock.nowMs(),
        cost,
      );
      // Touch existing keys first, then add new ones (the store's order), then trim the oldest.
      keys.forEach((key, k) => {
        const held = states.get(key);
        const state = expected.states[k];
        if (held !== undefined) {
          states.delete(key);
          states.set(key, state ?? held);
        }
      });
      keys.forEach((key, k) => {
        const state = expected.states[k];
        if (!states.has(key) && state !== undefined) {
          states.set(key, state);
          if (states.size > maxKeys) states.delete(states.keys().next().value as string);
        }
      });
      expect(store.decideSync({ subject, checks, cost })).toEqual(expected.decision);
      expect(store.keyCount).toBe(states.size);
    }
  });
});
