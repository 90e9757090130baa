import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../limiter/clock";
import { decideLayered, peekLayered, UNLIMITED } from "../limiter/layered";
import type { LimitState } from "../limiter/step-limit";
import type {
  DecideInput,
  LayeredDecision,
  LimitCheck,
  LimiterStore,
  LimitMode,
  LimitSpec,
} from "../limiter/types";
import { atUtc, DAY_MS, MINUTE_MS } from "./times";

/** A store under test. `close` releases connections after the suite. */
export type ContractStore = LimiterStore & { close?(): Promise<void> };

/**
 * The behaviour every `LimiterStore` must have, as one reusable suite. It asserts decisions only,
 * never which internals were touched, and gives every test its own subjects, so one shared store
 * (or one shared Redis) can run it. The store must take its time from the `ManualClock` it is
 * given; tests drive that clock and never sleep.
 */
export function runLimiterStoreContract(
  name: string,
  makeStore: (clock: ManualClock) => Promise<ContractStore>,
): void {
  describe(`LimiterStore contract: ${name}`, () => {
    let clock: ManualClock;
    let store: ContractStore;
    const runId = Math.random().toString(36).slice(2, 10);
    let subjectCount = 0;
    /** A subject no other test (or run sharing the store) uses. */
    const newSubject = (label: string) => `contract:${runId}:${++subjectCount}:${label}`;

    beforeAll(async () => {
      clock = new ManualClock(atUtc("10:00:00"));
      store = await makeStore(clock);
    });

    afterAll(async () => {
      await store.close?.();
    });

    const one = (scope: string, limit: LimitSpec, mode: LimitMode = "enforce"): LimitCheck => ({
      scope,
      limit,
      mode,
    });
    const tokens = (capacity: number, refillPerSec: number): LimitSpec => ({
      algorithm: "token-bucket",
      capacity,
      refillPerSec,
    });

    /** `count` decisions of `cost` at the current instant. */
    async function decideMany(input: DecideInput, count: number): Promise<LayeredDecision[]> {
      const decisions: LayeredDecision[] = [];
      for (let i = 0; i < count; i++) decisions.push(await store.decide(input));
      return decisions;
    }

    const admittedCount = (decisions: readonly LayeredDecision[]) =>
      decisions.filter((d) => d.allowed).length;

    describe("the seed documents' worked examples", () => {
      it("boundary burst: 100 at 10:04:59 and 100 at 10:05:01 all pass a fixed window", async () => {
        const input = {
          subject: newSubject("burst"),
          checks: [one("minute", { algorithm: "fixed-window", limit: 100, windowMs: MINUTE_MS })],
        };
        clock.set(atUtc("10:04:59"));
        expect(admittedCount(await decideMany(input, 100))).toBe(100);
        clock.set(atUtc("10:05:01"));
        expect(admittedCount(await decideMany(input, 100))).toBe(100);
      });

      it("boundary burst: the sliding log rejects the whole second 100, retry at 10:05:59", async () => {
        const input = {
          subject: newSubject("burst"),
          checks: [one("minute", { algorithm: "sliding-log", limit: 100, windowMs: MINUTE_MS })],
        };
        clock.set(atUtc("10:04:59"));
        expect(admittedCount(await decideMany(input, 100))).toBe(100);
        clock.set(atUtc("10:05:01"));
        const second = await decideMany(input, 100);
        expect(admittedCount(second)).toBe(0);
        expect(second[0]).toMatchObject({ reason: "limit-exceeded", retryAfterMs: 58_000 });
      });

      it("sliding counter: 90 last minute, 20 this minute, at 10:05:15 the estimate is 87.5: admitted", async () => {
        const input = {
          subject: newSubject("estimate"),
          checks: [one("minute", { algorithm: "sliding-window", limit: 100, windowMs: MINUTE_MS })],
        };
        for (let i = 0; i < 90; i++) {
          clock.set(atUtc("10:04:00") + Math.floor((i * MINUTE_MS) / 90));
          expect((await store.decide(input)).allowed).toBe(true);
        }
        clock.set(atUtc("10:05:10"));
        expect(admittedCount(await decideMany(input, 20))).toBe(20);
        clock.set(atUtc("10:05:15"));
        expect((await store.peek({ ...input, cost: 0 })).remaining).toBe(12);
        expect(await store.decide(input)).toMatchObject({ allowed: true, remaining: 11 });
      });

      it("sliding counter under-counts: all 90 at 10:04:59 plus 20 is 110 in the minute, yet admitted", async () => {
        const input = {
          subject: newSubject("undercount"),
          checks: [one("minute", { algorithm: "sliding-window", limit: 100, windowMs: MINUTE_MS })],
        };
        clock.set(atUtc("10:04:59"));
        expect(admittedCount(await decideMany(input, 90))).toBe(90);
        clock.set(atUtc("10:05:10"));
        expect(admittedCount(await decideMany(input, 20))).toBe(20);
        clock.set(atUtc("10:05:15"));
        expect((await store.decide(input)).allowed).toBe(true);
      });

      it("token bucket's worked minute: 20 at once, +50 ms rejected with 50 ms, full after 3 s", async () => {
        const input = { subject: newSubject("minute"), checks: [one("api", tokens(20, 10))] };
        clock.set(atUtc("10:00:00"));
        expect(admittedCount(await decideMany(input, 20))).toBe(20);
        clock.advance(50);
        expect(await store.decide(input)).toMatchObject({
          allowed: false,
          retryAfterMs: 50,
          remaining: 0,
          reason: "limit-exceeded",
          scope: "api",
        });
        clock.advance(3000);
        const batch = await decideMany(input, 21);
        expect(admittedCount(batch)).toBe(20);
        expect(batch[20]?.allowed).toBe(false);
      });

      it("0.4 tokens, cost 1, 10 per second: retryAfterMs 60, and admitted at exactly +60 ms", async () => {
        const input = { subject: newSubject("sixty"), checks: [one("api", tokens(1, 10))] };
        clock.set(atUtc("10:00:00"));
        expect((await store.decide(input)).allowed).toBe(true);
        clock.advance(40);
        expect(await store.decide(input)).toMatchObject({ allowed: false, retryAfterMs: 60 });
        clock.advance(60);
        expect((await store.decide(input)).allowed).toBe(true);
      });

      it("a key idle for a day cannot bank more than capacity", async () => {
        const input = { subject: newSubject("idle"), checks: [one("api", tokens(5, 1))] };
        clock.set(atUtc("10:00:00"));
        expect((await store.decide({ ...input, cost: 5 })).allowed).toBe(true);
        clock.advance(DAY_MS);
        expect((await store.peek({ ...input, cost: 0 })).remaining).toBe(5);
        const batch = await decideMany(input, 6);
        expect(batch.map((d) => d.allowed)).toEqual([true, true, true, true, true, false]);
      });

      it.each<[string, LimitSpec, number]>([
        ["fixed-window", { algorithm: "fixed-window", limit: 10, windowMs: MINUTE_MS }, 9],
        ["sliding-log", { algorithm: "sliding-log", limit: 10, windowMs: MINUTE_MS }, 9],
        ["sliding-window", { algorithm: "sliding-window", limit: 10, windowMs: MINUTE_MS }, 9],
        ["token-bucket", tokens(10, 1), 9],
        ["leaky-meter", { algorithm: "leaky-meter", burst: 10, drainPerSec: 1 }, 9],
      ])("a new key's first request is admitted: %s", async (_name, limit, remaining) => {
        clock.set(atUtc("10:00:00.250"));
        const decision = await store.decide({
          subject: newSubject("new"),
          checks: [one("api", limit)],
        });
        expect(decision).toMatchObject({
          allowed: true,
          limit: 10,
          remaining,
          retryAfterMs: 0,
          reason: null,
          scope: "api",
        });
      });
    });

    describe("one limit", () => {
      it("the default cost is 1", async () => {
        clock.set(atUtc("10:00:00"));
        const decision = await store.decide({
          subject: newSubject("cost"),
          checks: [one("api", tokens(5, 1))],
        });
        expect(decision.remaining).toBe(4);
      });

      it("rejection does not consume", async () => {
        const input = {
          subject: newSubject("reject"),
          checks: [one("api", { algorithm: "fixed-window", limit: 10, windowMs: MINUTE_MS })],
        };
        clock.set(atUtc("10:00:01"));
        expect((await store.decide({ ...input, cost: 8 })).allowed).toBe(true);
        expect((await store.decide({ ...input, cost: 5 })).allowed).toBe(false);
        expect((await store.decide({ ...input, cost: 5 })).allowed).toBe(false);
        expect(await store.decide({ ...input, cost: 2 })).toMatchObject({
          allowed: true,
          remaining: 0,
        });
      });

      it("a cost above capacity is cost-exceeds-capacity with retryAfterMs 0 and consumes nothing", async () => {
        const input = { subject: newSubject("huge"), checks: [one("api", tokens(5, 1))] };
        clock.set(atUtc("10:00:00"));
        expect(await store.decide({ ...input, cost: 6 })).toMatchObject({
          allowed: false,
          reason: "cost-exceeds-capacity",
          retryAfterMs: 0,
          scope: "api",
        });
        expect(await store.decide({ ...input, cost: 5 })).toMatchObject({ allowed: true });
      });

      it("cost 0 is admitted from an empty bucket and consumes nothing", async () => {
        const input = { subject: newSubject("zero"), checks: [one("api", tokens(1, 1))] };
        clock.set(atUtc("10:00:00"));
        await store.decide(input);
        expect(await store.decide({ ...input, cost: 0 })).toMatchObject({
          allowed: true,
          remaining: 0,
        });
        clock.advance(1000);
        expect((await store.decide(input)).allowed).toBe(true);
      });

      it("capacity 1 admits one, then one per refill interval", async () => {
        const input = { subject: newSubject("one"), checks: [one("api", tokens(1, 4))] };
        clock.set(atUtc("10:00:00"));
        expect((await decideMany(input, 2)).map((d) => d.allowed)).toEqual([true, false]);
        clock.advance(249);
        expect((await store.decide(input)).allowed).toBe(false);
        clock.advance(1);
        expect((await store.decide(input)).allowed).toBe(true);
      });

      it("a 1 ms window admits its limit each millisecond", async () => {
        const input = {
          subject: newSubject("tiny"),
          checks: [one("api", { algorithm: "fixed-window", limit: 1, windowMs: 1 })],
        };
        clock.set(atUtc("10:00:00"));
        expect((await decideMany(input, 2)).map((d) => d.allowed)).toEqual([true, false]);
        clock.advance(1);
        expect((await store.decide(input)).allowed).toBe(true);
      });

      it("a wait above 2^31 ms is reported exactly", async () => {
        const input = {
          subject: newSubject("month"),
          checks: [one("api", tokens(1, 1 / (30 * 24 * 3600)))],
        };
        clock.set(atUtc("10:00:00"));
        await store.decide(input);
        expect((await store.decide(input)).retryAfterMs).toBe(30 * DAY_MS);
      });

      it("the clock going back takes no tokens away and grants none", async () => {
        const input = { subject: newSubject("back"), checks: [one("api", tokens(10, 10))] };
        clock.set(atUtc("10:00:10"));
        await store.decide({ ...input, cost: 5 });
        clock.set(atUtc("10:00:00"));
        expect((await store.peek({ ...input, cost: 0 })).remaining).toBe(5);
        expect((await store.decide({ ...input, cost: 5 })).allowed).toBe(true);
        expect((await store.decide(input)).allowed).toBe(false);
      });

      it("subjects and buckets are independent, whatever characters the subject holds", async () => {
        const prefix = newSubject("sep");
        const limit = tokens(1, 0.001);
        clock.set(atUtc("10:00:00"));
        // Joined naively with ":" both pairs would be `${prefix}:y:z`.
        expect(
          (await store.decide({ subject: `${prefix}:y`, checks: [one("z", limit)] })).allowed,
        ).toBe(true);
        expect((await store.decide({ subject: prefix, checks: [one("y:z", limit)] })).allowed).toBe(
          true,
        );
        expect(
          (await store.decide({ subject: `${prefix}:y`, checks: [one("z", limit)] })).allowed,
        ).toBe(false);
      });
    });

    describe("peek", () => {
      it("consumes nothing, however often it is called", async () => {
        const input = { subject: newSubject("peek"), checks: [one("api", tokens(3, 1))] };
        clock.set(atUtc("10:00:00"));
        for (let i = 0; i < 10; i++) {
          expect(await store.peek(input)).toMatchObject({ allowed: true, remaining: 2 });
        }
        expect((await decideMany(input, 4)).map((d) => d.allowed)).toEqual([
          true,
          true,
          true,
          false,
        ]);
      });

      it("reports what the next decision will be", async () => {
        const input = {
          subject: newSubject("peek"),
          checks: [one("api", tokens(2, 1)), one("ceiling", tokens(5, 1))],
        };
        clock.set(atUtc("10:00:00"));
        await decideMany(input, 2);
        clock.advance(300);
        const peeked = await store.peek(input);
        expect(await store.decide(input)).toEqual(peeked);
      });
    });

    describe("layered decisions", () => {
      it("admits only if every enforced limit admits, and a rejection consumes from none", async () => {
        const input = {
          subject: newSubject("layers"),
          checks: [one("account", tokens(5, 0.001)), one("endpoint", tokens(2, 0.001))],
        };
        clock.set(atUtc("10:00:00"));
        const decisions = await decideMany(input, 4);
        expect(decisions.map((d) => d.allowed)).toEqual([true, true, false, false]);
        expect(decisions[2]?.outcomes.map((o) => o.allowed)).toEqual([true, false]);
        const after = await store.peek({ ...input, cost: 0 });
        expect(after.outcomes.map((o) => o.remaining)).toEqual([3, 0]);
      });

      it("the top level shows the enforced limit with the least remaining", async () => {
        clock.set(atUtc("10:00:00"));
        const decision = await store.decide({
          subject: newSubject("binding"),
          checks: [one("ceiling", tokens(100, 1)), one("account", tokens(10, 1))],
        });
        expect(decision).toMatchObject({
          allowed: true,
          scope: "account",
          limit: 10,
          remaining: 9,
        });
      });

      it("a rejection reports the largest retryAfterMs among rejecting limits, and its scope", async () => {
        const input = {
          subject: newSubject("retry"),
          checks: [one("fast", tokens(1, 10)), one("slow", tokens(1, 1))],
        };
        clock.set(atUtc("10:00:00"));
        const [, rejected] = await decideMany(input, 2);
        expect(rejected).toMatchObject({ allowed: false, scope: "slow", retryAfterMs: 1000 });
        clock.advance(1000);
        expect((await store.decide(input)).allowed).toBe(true);
      });

      it("a dry-run limit is reported, never rejects, and consumes only what is admitted and fits it", async () => {
        const input = {
          subject: newSubject("dry"),
          checks: [
            one("enforced", tokens(3, 0.001)),
            one("candidate", tokens(1, 0.001), "dry-run"),
          ],
        };
        clock.set(atUtc("10:00:00"));
        const decisions = await decideMany(input, 4);
        expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false]);
        expect(decisions.map((d) => d.outcomes[1]?.allowed)).toEqual([true, false, false, false]);
        expect(decisions[2]).toMatchObject({ scope: "enforced", remaining: 0 });
        expect((await store.peek({ ...input, cost: 0 })).outcomes.map((o) => o.remaining)).toEqual([
          0, 0,
        ]);
      });

      it("with no enforced limit the request is admitted, unbound", async () => {
        clock.set(atUtc("10:00:00"));
        const decision = await store.decide({
          subject: newSubject("unbound"),
          checks: [one("candidate", tokens(1, 1), "dry-run")],
        });
        expect(decision).toMatchObject({
          allowed: true,
          scope: null,
          limit: UNLIMITED,
          remaining: UNLIMITED,
          retryAfterMs: 0,
        });
        expect(decision.outcomes).toHaveLength(1);
      });

      it("two checks on one bucket are refused, and nothing is consumed", async () => {
        const subject = newSubject("shared");
        clock.set(atUtc("10:00:00"));
        await expect(
          store.decide({
            subject,
            checks: [
              { scope: "tier:pro", bucket: "account", limit: tokens(2, 1), mode: "enforce" },
              { scope: "override:acme", bucket: "account", limit: tokens(5, 1), mode: "enforce" },
            ],
          }),
        ).rejects.toThrow(/share the bucket/);
        const check: LimitCheck = {
          scope: "tier:pro",
          bucket: "account",
          limit: tokens(2, 1),
          mode: "enforce",
        };
        expect((await store.peek({ subject, checks: [check], cost: 0 })).remaining).toBe(2);
      });

      it("an override on the same bucket keeps the balance: an edit neither resets nor refills", async () => {
        const subject = newSubject("override");
        clock.set(atUtc("10:00:00"));
        await store.decide({
          subject,
          checks: [
            { scope: "tier:pro", bucket: "account", limit: tokens(10, 0.001), mode: "enforce" },
          ],
          cost: 6,
        });
        const raised = await store.decide({
          subject,
          checks: [
            {
              scope: "override:acme",
              bucket: "account",
              limit: tokens(20, 0.001),
              mode: "enforce",
            },
          ],
        });
        expect(raised).toMatchObject({ scope: "override:acme", limit: 20, remaining: 3 });
      });
    });

    describe("properties", () => {
      const checksArbitrary = fc
        .array(
          fc.tuple(
            fc.oneof(
              fc.record({
                algorithm: fc.constant("token-bucket" as const),
                capacity: fc.integer({ min: 1, max: 5 }),
                refillPerSec: fc.integer({ min: 1, max: 20 }),
              }),
              fc.record({
                algorithm: fc.constant("fixed-window" as const),
                limit: fc.integer({ min: 1, max: 5 }),
                windowMs: fc.integer({ min: 1, max: 400 }),
              }),
              fc.record({
                algorithm: fc.constant("sliding-log" as const),
                limit: fc.integer({ min: 1, max: 5 }),
                windowMs: fc.integer({ min: 1, max: 400 }),
              }),
              fc.record({
                algorithm: fc.constant("sliding-window" as const),
                limit: fc.integer({ min: 1, max: 5 }),
                windowMs: fc.integer({ min: 1, max: 400 }),
              }),
              fc.record({
                algorithm: fc.constant("leaky-meter" as const),
                burst: fc.integer({ min: 1, max: 5 }),
                drainPerSec: fc.integer({ min: 1, max: 20 }),
              }),
            ),
            fc.constantFrom<LimitMode>("enforce", "dry-run"),
          ),
          { minLength: 1, maxLength: 3 },
        )
        .map((pairs) => pairs.map(([limit, mode], i) => one(`scope-${i}`, limit, mode)));
      const requestsArbitrary = fc.array(
        fc.tuple(fc.integer({ min: 0, max: 150 }), fc.integer({ min: 0, max: 3 })),
        { minLength: 1, maxLength: 25 },
      );

      it("decides exactly as the pure layered combiner does, request after request", async () => {
        await fc.assert(
          fc.asyncProperty(checksArbitrary, requestsArbitrary, async (checks, requests) => {
            const subject = newSubject("model");
            let states: readonly (LimitState | undefined)[] = checks.map(() => undefined);
            clock.set(atUtc("10:00:00"));
            for (const [gapMs, cost] of requests) {
              const nowMs = clock.advance(gapMs);
              const expected = decideLayered(states, checks, nowMs, cost);
              expect(await store.peek({ subject, checks, cost })).toEqual(
                peekLayered(states, checks, nowMs, cost),
              );
              expect(await store.decide({ subject, checks, cost })).toEqual(expected.decision);
              states = expected.states;
            }
          }),
          { numRuns: 40 },
        );
      });

      it("a rejection never consumes: peeks before and after it agree", async () => {
        await fc.assert(
          fc.asyncProperty(checksArbitrary, requestsArbitrary, async (checks, requests) => {
            const subject = newSubject("noconsume");
            clock.set(atUtc("10:00:00"));
            for (const [gapMs, cost] of requests) {
              clock.advance(gapMs);
              const before = await store.peek({ subject, checks, cost });
              const decision = await store.decide({ subject, checks, cost });
              if (!decision.allowed) {
                expect(await store.peek({ subject, checks, cost })).toEqual(before);
              }
            }
          }),
          { numRuns: 40 },
        );
      });

      it("retryAfterMs is never negative, and waiting exactly that long is admitted", async () => {
        await fc.assert(
          fc.asyncProperty(checksArbitrary, requestsArbitrary, async (checks, requests) => {
            const subject = newSubject("retry");
            clock.set(atUtc("10:00:00"));
            for (const [gapMs, cost] of requests) {
              clock.advance(gapMs);
              const decision = await store.decide({ subject, checks, cost });
              expect(decision.retryAfterMs).toBeGreaterThanOrEqual(0);
              if (decision.reason === "limit-exceeded") {
                clock.advance(decision.retryAfterMs);
                expect((await store.decide({ subject, checks, cost })).allowed).toBe(true);
              }
            }
          }),
          { numRuns: 40 },
        );
      });
    });
  });
}
