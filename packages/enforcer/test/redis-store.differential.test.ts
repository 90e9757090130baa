import fc from "fast-check";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ManualClock } from "../src/limiter/clock";
import { bucketOf, decideLayered } from "../src/limiter/layered";
import { type LeakyShaperState, stepLeakyShaper } from "../src/limiter/leaky-shaper";
import type { LimitState } from "../src/limiter/step-limit";
import { RedisStore } from "../src/limiter/stores/redis";
import type { LeakyShaperLimit, LimitCheck, LimitMode, LimitSpec } from "../src/limiter/types";
import { awkwardDurationMs, awkwardStartMs } from "../src/testing/arrivals";
import { ReferenceStore } from "../src/testing/reference-store";
import { readyRedis } from "./support/redis";
import { packedStateOf } from "./support/stored-state";

/*
 * The script must agree with the pure core decision for decision, rounding included, on inputs
 * chosen to be awkward for doubles: fractional sizes, rates and costs, windows whose multiples are
 * inexact, epoch-sized and negative start times, a clock that steps back, and policy edits between
 * requests that change a bucket's numbers or its algorithm. Every step compares the reference
 * store (the pure layered combiner over a Map) with the Redis store, both reading one ManualClock.
 *
 * Decisions are rounded (whole units, whole milliseconds), so a script that drifted from the core
 * by a unit in the last place would still agree for a long while. The first property therefore
 * also reads back what Redis stores after every decision and requires it to be the core's state,
 * bit for bit. That reads the script's storage format (see redis-decide.lua), which only
 * this test may know.
 */

/**
 * The state Redis holds for `bucket` under `subject`, decoded: its field of the subject's hash,
 * unless that marks a sliding log (its algorithm byte alone), whose entries are a sorted set of
 * their own. An empty sliding log is no state, as in the core.
 */
async function storedState(
  client: Redis,
  store: RedisStore,
  subject: string,
  bucket: string,
): Promise<LimitState | undefined> {
  const packed = await packedStateOf(client, store, subject, bucket);
  if (packed === null) return undefined;
  if (packed.length === 1 && packed[0] === 2) {
    const key = store.logKey(subject, bucket);
    if ((await client.type(key)) === "none") return undefined;
    const reply = await client.call("ZRANGE", key, "0", "-1", "WITHSCORES");
    if (!Array.isArray(reply)) throw new Error(`unexpected ZRANGE reply ${String(reply)}`);
    // RESP3 (ioredis 6's default) pairs member and score; RESP2 flattens them.
    const flat: unknown[] = reply.flat();
    const entries: number[] = [];
    for (let i = 0; i < flat.length; i += 2) {
      const member = String(flat[i]);
      entries.push(Number(flat[i + 1]), Number(member.slice(member.indexOf(":") + 1)));
    }
    return { algorithm: "sliding-log", entries };
  }
  const double = (index: number) => packed.readDoubleLE(1 + 8 * index);
  switch (packed[0]) {
    case 1:
      return { algorithm: "fixed-window", windowStartMs: double(0), count: double(1) };
    case 3:
      return {
        algorithm: "sliding-window",
        windowStartMs: double(0),
        currentCount: double(1),
        previousCount: double(2),
      };
    case 4:
      return { algorithm: "token-bucket", tokens: double(0), lastMs: double(1) };
    case 5:
      return { algorithm: "leaky-meter", zeroRoomAtMs: double(0) };
    default:
      throw new Error(`unexpected packed state ${packed.toString("hex")} of ${bucket}`);
  }
}

function normalised(state: LimitState | undefined): LimitState | undefined {
  return state?.algorithm === "sliding-log" && state.entries.length === 0 ? undefined : state;
}

const sizeArbitrary = fc.oneof(
  fc.constantFrom(0, 1, 2, 3, 5, 20),
  fc.double({ min: 0.25, max: 30, noNaN: true }),
);
/** Mostly slow enough that buckets are seldom full, where refill rounding shows. */
const rateArbitrary = fc.oneof(
  fc.constantFrom(0.001, 1, 10, 1000 / 3),
  fc.double({ min: 0.01, max: 50, noNaN: true }),
);

const specArbitrary: fc.Arbitrary<LimitSpec> = fc.oneof(
  fc.record({
    algorithm: fc.constant("fixed-window" as const),
    limit: sizeArbitrary,
    windowMs: awkwardDurationMs,
  }),
  fc.record({
    algorithm: fc.constant("sliding-log" as const),
    limit: sizeArbitrary,
    windowMs: awkwardDurationMs,
  }),
  fc.record({
    algorithm: fc.constant("sliding-window" as const),
    limit: sizeArbitrary,
    windowMs: awkwardDurationMs,
  }),
  fc.record({
    algorithm: fc.constant("token-bucket" as const),
    capacity: sizeArbitrary,
    refillPerSec: rateArbitrary,
  }),
  fc.record({
    algorithm: fc.constant("leaky-meter" as const),
    burst: sizeArbitrary,
    drainPerSec: rateArbitrary,
  }),
);

/** Up to three policies over the same buckets: switching between them is a policy edit. */
const policiesArbitrary = fc
  .integer({ min: 1, max: 4 })
  .chain((bucketCount) =>
    fc.array(
      fc.array(fc.tuple(specArbitrary, fc.constantFrom<LimitMode>("enforce", "dry-run")), {
        minLength: bucketCount,
        maxLength: bucketCount,
      }),
      { minLength: 1, maxLength: 3 },
    ),
  )
  .map((policies) =>
    policies.map((pairs, policy) =>
      pairs.map(
        ([limit, mode], i): LimitCheck => ({
          scope: `policy-${policy}/limit-${i}`,
          bucket: i === 0 ? "ceiling" : `endpoint:{e${i}}`,
          limit,
          mode,
        }),
      ),
    ),
  );

const stepArbitrary = fc.record({
  gapMs: fc.oneof(
    fc.constant(0),
    fc.integer({ min: 0, max: 2_000 }),
    fc.double({ min: 0, max: 5_000, noNaN: true }),
    fc.integer({ min: -3_000, max: -1 }),
  ),
  cost: fc.oneof(
    fc.constant(1),
    fc.integer({ min: 0, max: 6 }),
    fc.double({ min: 0, max: 8, noNaN: true }),
  ),
  isPeek: fc.boolean(),
  policy: fc.nat(),
});

describe("RedisStore agrees with the pure core", () => {
  let client: Redis;
  let runCount = 0;
  const prefix = `${inject("redisKeyPrefix")}diff:`;

  beforeAll(async () => {
    client = await readyRedis("decisions");
  });

  afterAll(async () => {
    await client.quit();
  });

  it("on random sequences of time steps, costs, peeks and policy edits over every algorithm", async () => {
    await fc.assert(
      fc.asyncProperty(
        awkwardStartMs,
        policiesArbitrary,
        fc.array(stepArbitrary, { minLength: 1, maxLength: 30 }),
        async (startMs, policies, steps) => {
          const clock = new ManualClock(startMs);
          const reference = new ReferenceStore(clock);
          const store = new RedisStore({ client, keyPrefix: prefix, clock });
          const subject = `c:run-${++runCount}`;
          // The core's state per bucket, threaded like the reference store does, to compare with
          // what Redis holds.
          const expectedStates = new Map<string, LimitState>();
          for (const step of steps) {
            const nowMs = clock.advance(step.gapMs);
            const checks = policies[step.policy % policies.length] ?? [];
            const input = { subject, checks, cost: step.cost };
            if (step.isPeek) {
              expect(await store.peek(input)).toEqual(await reference.peek(input));
              continue;
            }
            expect(await store.decide(input)).toEqual(await reference.decide(input));
            const buckets = checks.map(bucketOf);
            const next = decideLayered(
              buckets.map((bucket) => expectedStates.get(bucket)),
              checks,
              nowMs,
              step.cost,
            ).states;
            for (const [i, bucket] of buckets.entries()) {
              const state = next[i];
              if (state !== undefined) expectedStates.set(bucket, state);
              expect(await storedState(client, store, subject, bucket)).toEqual(
                normalised(expectedStates.get(bucket)),
              );
            }
          }
        },
      ),
      { numRuns: 250 },
    );
  });

  it("with batching, decisions made together agree with the same decisions made in turn", async () => {
    const requestArbitrary = fc.record({
      subject: fc.constantFrom("c:one", "c:two", "a:192.0.2.1"),
      policy: fc.nat(),
      cost: stepArbitrary.map((step) => step.cost),
      isPeek: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(
        awkwardStartMs,
        policiesArbitrary,
        fc.array(
          fc.record({
            gapMs: stepArbitrary.map((step) => step.gapMs),
            requests: fc.array(requestArbitrary, { minLength: 1, maxLength: 12 }),
          }),
          { minLength: 1, maxLength: 8 },
        ),
        async (startMs, policies, groups) => {
          const clock = new ManualClock(startMs);
          const reference = new ReferenceStore(clock);
          const store = new RedisStore({ client, keyPrefix: prefix, clock, maxBatchSize: 5 });
          const run = ++runCount;
          for (const group of groups) {
            clock.advance(group.gapMs);
            const inputs = group.requests.map((request) => ({
              subject: `${request.subject}/run-${run}`,
              checks: policies[request.policy % policies.length] ?? [],
              cost: request.cost,
              isPeek: request.isPeek,
            }));
            // All sent in one turn: up to 5 per script call, evaluated in the order made.
            const batched = await Promise.all(
              inputs.map((input) => (input.isPeek ? store.peek(input) : store.decide(input))),
            );
            const inTurn = [];
            for (const input of inputs) {
              inTurn.push(await (input.isPeek ? reference.peek(input) : reference.decide(input)));
            }
            expect(batched).toEqual(inTurn);
          }
        },
      ),
      { numRuns: 100 },
    );
  });

  it("for the leaky shaper, reserving slots in turn", async () => {
    const shaperArbitrary: fc.Arbitrary<LeakyShaperLimit> = fc.record({
      algorithm: fc.constant("leaky-shaper" as const),
      maxQueue: sizeArbitrary,
      drainPerSec: rateArbitrary,
    });
    await fc.assert(
      fc.asyncProperty(
        awkwardStartMs,
        shaperArbitrary,
        fc.array(stepArbitrary, { minLength: 1, maxLength: 30 }),
        async (startMs, limit, steps) => {
          const clock = new ManualClock(startMs);
          const store = new RedisStore({ client, keyPrefix: prefix, clock });
          const input = { subject: `a:shaper-${++runCount}`, bucket: "queue", limit };
          let state: LeakyShaperState | undefined;
          for (const step of steps) {
            const nowMs = clock.advance(step.gapMs);
            const expected = stepLeakyShaper(state, limit, nowMs, step.cost);
            if (step.isPeek) {
              expect(await store.peekShape({ ...input, cost: step.cost })).toEqual(
                expected.decision,
              );
            } else {
              expect(await store.shape({ ...input, cost: step.cost })).toEqual(expected.decision);
              if (expected.decision.allowed) state = expected.state;
            }
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});
