import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  combineAnswers,
  combineOutcomes,
  decideLayered,
  decideLayeredBinding,
  LayeredScratch,
  peekLayered,
  UNLIMITED,
} from "./layered";
import type { LimitState } from "./step-limit";
import type { LimitCheck, LimitMode, LimitSpec } from "./types";

const T0 = 1_700_000_000_000;

function check(
  scope: string,
  limit: LimitSpec,
  mode: LimitMode = "enforce",
  bucket?: string,
): LimitCheck {
  return bucket === undefined ? { scope, limit, mode } : { scope, limit, mode, bucket };
}

const tokens = (capacity: number, refillPerSec = 1): LimitSpec => ({
  algorithm: "token-bucket",
  capacity,
  refillPerSec,
});

/** Runs the combiner over a request sequence, threading the states. */
function run(checks: readonly LimitCheck[], requests: readonly { atMs: number; cost: number }[]) {
  let states: readonly (LimitState | undefined)[] = checks.map(() => undefined);
  const decisions = requests.map(({ atMs, cost }) => {
    const step = decideLayered(states, checks, atMs, cost);
    states = step.states;
    return step.decision;
  });
  return { decisions, states };
}

describe("layered decisions", () => {
  it("admits only if every enforced check admits", () => {
    const checks = [check("account", tokens(5)), check("endpoint", tokens(2))];
    const { decisions } = run(checks, [
      { atMs: T0, cost: 1 },
      { atMs: T0, cost: 1 },
      { atMs: T0, cost: 1 },
    ]);
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, false]);
    expect(decisions[2]?.outcomes.map((o) => o.allowed)).toEqual([true, false]);
  });

  it("a rejection consumes from none: the admitting check keeps its state untouched", () => {
    const checks = [check("account", tokens(5)), check("endpoint", tokens(1))];
    const first = decideLayered([undefined, undefined], checks, T0, 1);
    const rejected = decideLayered(first.states, checks, T0, 1);
    expect(rejected.decision.allowed).toBe(false);
    expect(rejected.states[0]).toBe(first.states[0]);
    expect(peekLayered(rejected.states, checks, T0, 0).outcomes.map((o) => o.remaining)).toEqual([
      4, 0,
    ]);
  });

  it("a rejection leaves a new key with no state to write for checks that would have admitted", () => {
    const checks = [check("account", tokens(5)), check("endpoint", tokens(1))];
    const { states } = decideLayered([undefined, undefined], checks, T0, 2);
    expect(states[0]).toBeUndefined();
  });

  it("on admission the top level is the enforced limit with the least remaining", () => {
    const checks = [
      check("ceiling", tokens(100)),
      check("account", tokens(10)),
      check("endpoint", tokens(50)),
    ];
    const { decision } = decideLayered([undefined, undefined, undefined], checks, T0, 1);
    expect(decision).toMatchObject({ allowed: true, scope: "account", limit: 10, remaining: 9 });
    expect(decision.outcomes.map((o) => o.scope)).toEqual(["ceiling", "account", "endpoint"]);
  });

  it("ties for least remaining go to the check listed first", () => {
    const checks = [check("a", tokens(3)), check("b", tokens(3))];
    expect(decideLayered([undefined, undefined], checks, T0, 1).decision.scope).toBe("a");
  });

  it("on rejection retryAfterMs is the largest among rejecting limits, and scope is that limit", () => {
    const checks = [
      check("fast", tokens(1, 10)),
      check("slow", tokens(1, 1)),
      check("roomy", tokens(100, 1)),
    ];
    const { decisions } = run(checks, [
      { atMs: T0, cost: 1 },
      { atMs: T0, cost: 1 },
    ]);
    expect(decisions[1]).toMatchObject({
      allowed: false,
      scope: "slow",
      retryAfterMs: 1000,
      reason: "limit-exceeded",
    });
    expect(decisions[1]?.outcomes.map((o) => o.retryAfterMs)).toEqual([100, 1000, 0]);
  });

  it("a cost-exceeds-capacity rejection binds over any finite wait: retrying can never help", () => {
    const checks = [check("slow", tokens(5, 0.01)), check("small", tokens(2))];
    const { decisions } = run(checks, [
      { atMs: T0, cost: 5 },
      { atMs: T0, cost: 3 },
    ]);
    expect(decisions[1]).toMatchObject({
      allowed: false,
      scope: "small",
      reason: "cost-exceeds-capacity",
      retryAfterMs: 0,
    });
  });

  it("a dry-run check is reported but never rejects and never blocks the others", () => {
    const checks = [check("enforced", tokens(5)), check("candidate", tokens(1), "dry-run")];
    const { decisions } = run(checks, [
      { atMs: T0, cost: 1 },
      { atMs: T0, cost: 1 },
      { atMs: T0, cost: 1 },
    ]);
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true]);
    expect(decisions.map((d) => d.outcomes[1]?.allowed)).toEqual([true, false, false]);
    expect(decisions[2]).toMatchObject({ scope: "enforced", remaining: 2 });
  });

  it("a dry-run check consumes only when the request is admitted and it would itself admit", () => {
    const checks = [check("enforced", tokens(2)), check("candidate", tokens(10), "dry-run")];
    const { decisions, states } = run(checks, [
      { atMs: T0, cost: 2 }, // admitted: candidate consumes 2
      { atMs: T0, cost: 1 }, // rejected by enforced: candidate consumes nothing
    ]);
    expect(decisions.map((d) => d.allowed)).toEqual([true, false]);
    expect(peekLayered(states, checks, T0, 0).outcomes[1]?.remaining).toBe(8);

    const rejecting = [check("enforced", tokens(10)), check("candidate", tokens(1), "dry-run")];
    const after = run(rejecting, [
      { atMs: T0, cost: 1 },
      { atMs: T0, cost: 1 },
      { atMs: T0, cost: 1 },
    ]);
    // The candidate would block the 2nd and 3rd; as it never admitted them, they did not consume.
    expect(peekLayered(after.states, rejecting, T0, 0).outcomes.map((o) => o.remaining)).toEqual([
      7, 0,
    ]);
  });

  it.each([
    { name: "no checks", checks: [] },
    { name: "only dry-run checks", checks: [check("candidate", tokens(1), "dry-run")] },
  ])("with no enforced check the request is admitted, unbound: $name", ({ checks }) => {
    const { decision } = decideLayered(
      checks.map(() => undefined),
      checks,
      T0,
      5,
    );
    expect(decision).toMatchObject({
      allowed: true,
      scope: null,
      limit: UNLIMITED,
      remaining: UNLIMITED,
      retryAfterMs: 0,
      resetAfterMs: 0,
      reason: null,
    });
    expect(decision.outcomes).toHaveLength(checks.length);
    expect(JSON.parse(JSON.stringify(decision)).limit).toBe(UNLIMITED);
  });

  it.each([
    {
      name: "the same scope twice",
      checks: [check("account", tokens(1)), check("account", tokens(2))],
    },
    {
      name: "two scopes on one bucket",
      checks: [
        check("tier:pro", tokens(1), "enforce", "account"),
        check("override:acme", tokens(2), "dry-run", "account"),
      ],
    },
    {
      name: "a scope equal to another check's bucket",
      checks: [check("account", tokens(1)), check("tier:pro", tokens(2), "enforce", "account")],
    },
  ])("checks sharing one bucket are an error: $name", ({ checks }) => {
    expect(() =>
      decideLayered(
        checks.map(() => undefined),
        checks,
        T0,
        1,
      ),
    ).toThrow(/share the bucket "account"/);
  });

  it("states that do not line up with the checks are an error", () => {
    expect(() => decideLayered([], [check("account", tokens(1))], T0, 1)).toThrow(RangeError);
  });

  it("a bucket whose limit changed algorithm starts afresh under the new one", () => {
    const asBucket = [check("account", tokens(1))];
    const { states } = run(asBucket, [{ atMs: T0, cost: 1 }]);
    const asWindow = [check("account", { algorithm: "fixed-window", limit: 3, windowMs: 60_000 })];
    expect(decideLayered(states, asWindow, T0, 1).decision).toMatchObject({
      allowed: true,
      remaining: 2,
    });
  });

  it("an override that keeps the bucket keeps its balance: the edit neither resets nor refills", () => {
    const tier = [check("tier:pro", tokens(10), "enforce", "account")];
    const { states } = run(tier, [{ atMs: T0, cost: 6 }]);
    const override = [check("override:acme", tokens(20), "enforce", "account")];
    expect(decideLayered(states, override, T0, 1).decision).toMatchObject({
      scope: "override:acme",
      limit: 20,
      remaining: 3,
    });
  });
});

describe("the combine kernel", () => {
  const answer = (allowed: boolean, mode: LimitMode) => ({ allowed, mode });

  it("admits when every enforced answer admits, whatever the dry-run answers say", () => {
    const answers = [answer(true, "enforce"), answer(false, "dry-run"), answer(true, "dry-run")];
    const writes = [9, 9, 9];
    expect(combineAnswers(3, answers, answers, writes)).toBe(true);
    // On admission every stepped state is stored, the rejecting dry-run's own included.
    expect(writes).toEqual([1, 1, 1]);
  });

  it("rejects on one enforced rejection and keeps the state of every check that admitted", () => {
    const answers = [answer(true, "enforce"), answer(false, "enforce"), answer(true, "dry-run")];
    const writes = [9, 9, 9];
    expect(combineAnswers(3, answers, answers, writes)).toBe(false);
    expect(writes).toEqual([0, 1, 0]);
  });

  it("reads modes from the checks and answers from the steps, and writes nothing when asked not to", () => {
    const steps = [{ allowed: false }];
    expect(combineAnswers(1, steps, [{ mode: "dry-run" as const }], null)).toBe(true);
    expect(combineAnswers(1, steps, [{ mode: "enforce" as const }], null)).toBe(false);
    expect(combineAnswers(0, [], [], [])).toBe(true);
  });
});

describe("layered decisions: properties", () => {
  const specArbitrary: fc.Arbitrary<LimitSpec> = fc.oneof(
    fc.record({
      algorithm: fc.constant("token-bucket" as const),
      capacity: fc.integer({ min: 1, max: 6 }),
      refillPerSec: fc.integer({ min: 1, max: 20 }),
    }),
    fc.record({
      algorithm: fc.constant("fixed-window" as const),
      limit: fc.integer({ min: 1, max: 6 }),
      windowMs: fc.integer({ min: 1, max: 500 }),
    }),
    fc.record({
      algorithm: fc.constant("sliding-log" as const),
      limit: fc.integer({ min: 1, max: 6 }),
      windowMs: fc.integer({ min: 1, max: 500 }),
    }),
    fc.record({
      algorithm: fc.constant("sliding-window" as const),
      limit: fc.integer({ min: 1, max: 6 }),
      windowMs: fc.integer({ min: 1, max: 500 }),
    }),
    fc.record({
      algorithm: fc.constant("leaky-meter" as const),
      burst: fc.integer({ min: 1, max: 6 }),
      drainPerSec: fc.integer({ min: 1, max: 20 }),
    }),
  );
  const checksArbitrary = fc
    .array(fc.tuple(specArbitrary, fc.constantFrom<LimitMode>("enforce", "dry-run")), {
      minLength: 1,
      maxLength: 4,
    })
    .map((pairs) => pairs.map(([limit, mode], i) => check(`scope-${i}`, limit, mode)));
  const requestsArbitrary = fc.array(
    fc.tuple(fc.integer({ min: 0, max: 200 }), fc.integer({ min: 0, max: 4 })),
    { minLength: 1, maxLength: 40 },
  );

  it("a rejection never consumes: every check reads the same before and after it", () => {
    fc.assert(
      fc.property(checksArbitrary, requestsArbitrary, (checks, requests) => {
        let states: readonly (LimitState | undefined)[] = checks.map(() => undefined);
        let nowMs = T0;
        for (const [gapMs, cost] of requests) {
          nowMs += gapMs;
          const step = decideLayered(states, checks, nowMs, cost);
          if (!step.decision.allowed) {
            for (const probeCost of [0, 1, cost]) {
              expect(peekLayered(step.states, checks, nowMs, probeCost)).toEqual(
                peekLayered(states, checks, nowMs, probeCost),
              );
            }
          }
          states = step.states;
        }
      }),
    );
  });

  it("the decision agrees with its outcomes: admitted iff no enforced outcome rejects", () => {
    fc.assert(
      fc.property(checksArbitrary, requestsArbitrary, (checks, requests) => {
        let states: readonly (LimitState | undefined)[] = checks.map(() => undefined);
        let nowMs = T0;
        for (const [gapMs, cost] of requests) {
          nowMs += gapMs;
          const { decision, states: next } = decideLayered(states, checks, nowMs, cost);
          const enforced = decision.outcomes.filter((o) => o.mode === "enforce");
          expect(decision.allowed).toBe(enforced.every((o) => o.allowed));
          if (decision.allowed && enforced.length > 0) {
            expect(decision.remaining).toBe(Math.min(...enforced.map((o) => o.remaining)));
          }
          if (!decision.allowed) {
            expect(decision.retryAfterMs).toBe(
              decision.reason === "cost-exceeds-capacity"
                ? 0
                : Math.max(...enforced.filter((o) => !o.allowed).map((o) => o.retryAfterMs)),
            );
          }
          states = next;
        }
      }),
    );
  });

  it("combineOutcomes rebuilds exactly the decision decideLayered made from the same outcomes", () => {
    fc.assert(
      fc.property(checksArbitrary, requestsArbitrary, (checks, requests) => {
        let states: readonly (LimitState | undefined)[] = checks.map(() => undefined);
        let nowMs = T0;
        for (const [gapMs, cost] of requests) {
          nowMs += gapMs;
          const { decision, states: next } = decideLayered(states, checks, nowMs, cost);
          expect(combineOutcomes(decision.outcomes)).toEqual(decision);
          states = next;
        }
      }),
    );
  });

  it("decideLayeredBinding writes the states decideLayered returns and names its binding check", () => {
    const scratch = new LayeredScratch();
    fc.assert(
      fc.property(checksArbitrary, requestsArbitrary, (checks, requests) => {
        let states: readonly (LimitState | undefined)[] = checks.map(() => undefined);
        let nowMs = T0;
        for (const [gapMs, cost] of requests) {
          nowMs += gapMs;
          const { decision, states: expected } = decideLayered(states, checks, nowMs, cost);
          const next = new Array<LimitState | undefined>(checks.length);
          const bound = decideLayeredBinding(states, checks, nowMs, cost, next, scratch);
          expect(next).toEqual(expected);
          expect(scratch.isAllowed).toBe(decision.allowed);
          expect(bound === -1 ? null : checks[bound]?.scope).toBe(decision.scope);
          states = expected;
        }
      }),
    );
  });
});
