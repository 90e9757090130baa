import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../limiter/clock";
import type { LimitSpec } from "../limiter/types";
import { FailurePolicy, localShareOf } from "./failure-policy";
import { buildRateLimitResponse } from "./http-headers";
import {
  type EnforcerCheck,
  type EnforcerInput,
  STORE_FAILURES,
  type StoreFailure,
  type StoreFailurePolicy,
} from "./types";

const T0 = 1_700_000_000_000;
const PRO: LimitSpec = { algorithm: "token-bucket", capacity: 20, refillPerSec: 10 };
const CEILING: LimitSpec = { algorithm: "fixed-window", limit: 300, windowMs: 60_000 };
const SIGN_IN: LimitSpec = { algorithm: "fixed-window", limit: 5, windowMs: 60_000 };

function check(
  scope: string,
  limit: LimitSpec,
  onStoreFailure: StoreFailurePolicy,
  mode: "enforce" | "dry-run" = "enforce",
): EnforcerCheck {
  return { scope, bucket: scope, limit, mode, onStoreFailure };
}

function policy(expectedGateways = 3): { policy: FailurePolicy; clock: ManualClock } {
  const clock = new ManualClock(T0);
  return { policy: new FailurePolicy({ expectedGateways, clock }), clock };
}

describe("localShareOf: the limit divided among the gateways", () => {
  it.each<[string, LimitSpec, number, number, LimitSpec]>([
    [
      "token bucket: capacity and rate divided",
      PRO,
      4,
      1,
      { algorithm: "token-bucket", capacity: 5, refillPerSec: 2.5 },
    ],
    [
      "leaky meter: burst and drain divided",
      { algorithm: "leaky-meter", burst: 30, drainPerSec: 6 },
      3,
      1,
      { algorithm: "leaky-meter", burst: 10, drainPerSec: 2 },
    ],
    [
      "window: limit divided, same window",
      CEILING,
      3,
      1,
      { algorithm: "fixed-window", limit: 100, windowMs: 60_000 },
    ],
    ["one gateway keeps the whole limit", PRO, 1, 1, PRO],
    [
      "the size never drops below 1",
      PRO,
      100,
      1,
      { algorithm: "token-bucket", capacity: 1, refillPerSec: 0.1 },
    ],
    [
      "the size never drops below one request's cost",
      PRO,
      100,
      5,
      { algorithm: "token-bucket", capacity: 5, refillPerSec: 0.1 },
    ],
    [
      "the size never rises above the shared limit (cost-exceeds-capacity stays so)",
      PRO,
      100,
      25,
      { algorithm: "token-bucket", capacity: 20, refillPerSec: 0.1 },
    ],
  ])("%s", (_name, spec, gateways, cost, expected) => {
    expect(localShareOf(spec, gateways, cost)).toEqual(expected);
  });

  it("keeps fractional shares: 20 among 3 gateways is 6.67 each, not 7", () => {
    expect(localShareOf(PRO, 3, 1)).toEqual({
      algorithm: "token-bucket",
      capacity: 20 / 3,
      refillPerSec: 10 / 3,
    });
  });

  it.each([0, 1.5, -1, Number.NaN])("refuses %d expected gateways", (gateways) => {
    expect(() => localShareOf(PRO, gateways, 1)).toThrow(RangeError);
    expect(() => new FailurePolicy({ expectedGateways: gateways })).toThrow(RangeError);
  });
});

describe("FailurePolicy: each limit does what it declares", () => {
  const cases: [StoreFailurePolicy, boolean, string | null][] = [
    ["open", true, null],
    ["closed", false, "store-unavailable"],
    ["local", true, null],
  ];
  for (const failure of STORE_FAILURES) {
    it.each(cases)(
      `after ${failure}, "%s" admits: %s (reason %s)`,
      (onStoreFailure, allowed, reason) => {
        const { policy: subject } = policy();
        const decision = subject.decide(
          { subject: "c:acme", checks: [check("tier:pro", PRO, onStoreFailure)] },
          failure,
        );
        expect(decision).toMatchObject({
          allowed,
          reason,
          degraded: true,
          failure,
          source: "fallback",
        });
        expect(decision.outcomes[0]?.fallback).toBe(onStoreFailure);
      },
    );
  }

  it("closed never admits on any failure, whatever else the request is checked against", () => {
    fc.assert(
      fc.property(
        fc.constantFrom<StoreFailure>(...STORE_FAILURES),
        fc.array(fc.constantFrom<StoreFailurePolicy>("open", "closed", "local"), {
          minLength: 0,
          maxLength: 4,
        }),
        fc.integer({ min: 0, max: 4 }),
        fc.integer({ min: 0, max: 5 }),
        (failure, others, closedAt, cost) => {
          const { policy: subject } = policy();
          const checks = others.map((onStoreFailure, index) =>
            check(`other-${index}`, PRO, onStoreFailure),
          );
          checks.splice(Math.min(closedAt, checks.length), 0, check("sign-in", SIGN_IN, "closed"));
          const decision = subject.decide({ subject: "a:10.0.0.1", checks, cost }, failure);
          expect(decision.allowed).toBe(false);
          expect(decision.retryAfterMs).toBeGreaterThanOrEqual(1000);
        },
      ),
    );
  });

  it("a closed rejection says store-unavailable and hints the longer of its wait and the cool-down", () => {
    const { policy: subject } = policy();
    const input = {
      subject: "a:10.0.0.1",
      checks: [check("address/endpoint:sign-in", SIGN_IN, "closed")],
    };
    expect(subject.decide(input, "timeout")).toMatchObject({
      allowed: false,
      reason: "store-unavailable",
      scope: "address/endpoint:sign-in",
      retryAfterMs: 1000,
    });
    expect(subject.decide(input, "circuit-open", 1_500.2).retryAfterMs).toBe(1501);
    expect(subject.decide(input, "circuit-open", 200).retryAfterMs).toBe(1000);
  });

  it("open admits without measuring: no binding limit, so no remaining is invented", () => {
    const { policy: subject } = policy();
    const decision = subject.decide(
      { subject: "c:acme", checks: [check("tier:pro", PRO, "open")] },
      "timeout",
    );
    expect(decision).toMatchObject({ allowed: true, scope: null, reason: null });
    expect(buildRateLimitResponse(decision, [check("tier:pro", PRO, "open")]).headers).toEqual({
      "RateLimit-Policy": '"tier:pro";q=20;w=2',
    });
  });

  it("a local quota admits a gateway's share of the worked example, then rejects with a wait", () => {
    // Bursts of 20 at 10/s among 3 gateways: 6.67 tokens at 3.33/s here.
    const { policy: subject, clock } = policy(3);
    const input = { subject: "c:acme", checks: [check("ceiling", PRO, "local")] };
    const admitted = Array.from({ length: 7 }, () => subject.decide(input, "timeout").allowed);
    expect(admitted).toEqual([true, true, true, true, true, true, false]);
    const rejected = subject.decide(input, "timeout");
    expect(rejected).toMatchObject({ allowed: false, reason: "limit-exceeded", scope: "ceiling" });
    // 0.67 tokens left: one more arrives after 100 ms at 3.33 per second.
    expect(rejected.retryAfterMs).toBe(100);
    clock.advance(100);
    expect(subject.decide(input, "timeout").allowed).toBe(true);
  });

  it("the local quota is consumed only when the whole request is admitted", () => {
    const { policy: subject } = policy(1);
    const slow: LimitSpec = { algorithm: "token-bucket", capacity: 3, refillPerSec: 0.000_001 };
    const local = check("ceiling", slow, "local");
    const closed = check("address/endpoint:sign-in", SIGN_IN, "closed");
    for (let i = 0; i < 5; i++) {
      subject.decide({ subject: "a:10.0.0.1", checks: [local, closed] }, "store-error");
    }
    const decision = subject.decide({ subject: "a:10.0.0.1", checks: [local] }, "store-error");
    expect(decision).toMatchObject({ allowed: true, remaining: 2 });
  });

  it("one local limit rejecting consumes nothing from another local limit", () => {
    const { policy: subject } = policy(1);
    const tight = check(
      "ceiling/endpoint:reports",
      { algorithm: "fixed-window", limit: 1, windowMs: 60_000 },
      "local",
    );
    const roomy = check(
      "ceiling",
      { algorithm: "fixed-window", limit: 100, windowMs: 60_000 },
      "local",
    );
    subject.decide({ subject: "c:acme", checks: [tight, roomy] }, "timeout");
    for (let i = 0; i < 5; i++)
      subject.decide({ subject: "c:acme", checks: [tight, roomy] }, "timeout");
    const roomyOnly = subject.decide({ subject: "c:acme", checks: [roomy] }, "timeout");
    expect(roomyOnly.remaining).toBe(98);
  });

  it("reports the binding limit among those evaluated: the least remaining local one", () => {
    const { policy: subject } = policy(1);
    const decision = subject.decide(
      {
        subject: "c:acme",
        checks: [
          check("tier:pro", PRO, "open"),
          check("ceiling", CEILING, "local"),
          check(
            "ceiling/endpoint:reports",
            { algorithm: "fixed-window", limit: 10, windowMs: 60_000 },
            "local",
          ),
        ],
      },
      "timeout",
    );
    expect(decision).toMatchObject({
      allowed: true,
      scope: "ceiling/endpoint:reports",
      remaining: 9,
    });
    expect(decision.outcomes.map((outcome) => outcome.fallback)).toEqual([
      "open",
      "local",
      "local",
    ]);
  });

  it("a rejection reports the longest wait among the limits that rejected", () => {
    const { policy: subject } = policy(1);
    const tiny: LimitSpec = { algorithm: "token-bucket", capacity: 1, refillPerSec: 10 };
    const local = check("ceiling", tiny, "local");
    const closed = check("address/endpoint:sign-in", SIGN_IN, "closed");
    subject.decide({ subject: "a:10.0.0.1", checks: [local] }, "timeout");
    const decision = subject.decide({ subject: "a:10.0.0.1", checks: [local, closed] }, "timeout");
    expect(decision.outcomes[0]).toMatchObject({ allowed: false, retryAfterMs: 100 });
    expect(decision).toMatchObject({
      allowed: false,
      scope: "address/endpoint:sign-in",
      retryAfterMs: 1000,
    });
  });

  it("dry-run limits are not evaluated during a failure and never reject", () => {
    const { policy: subject } = policy(1);
    const strict: LimitSpec = { algorithm: "token-bucket", capacity: 1, refillPerSec: 0.001 };
    const checks = [
      check("tier:pro", PRO, "local"),
      check("candidate:strict", strict, "closed", "dry-run"),
      check("candidate:local", strict, "local", "dry-run"),
    ];
    for (let i = 0; i < 3; i++) {
      const decision = subject.decide({ subject: "c:acme", checks }, "timeout");
      expect(decision.allowed).toBe(true);
      expect(decision.outcomes.slice(1).every((outcome) => outcome.allowed)).toBe(true);
    }
    expect(subject.localKeyCount).toBe(1);
  });

  it("a request with no checks is admitted, degraded, unbound", () => {
    const { policy: subject } = policy();
    expect(subject.decide({ subject: "c:acme", checks: [] }, "circuit-open")).toMatchObject({
      allowed: true,
      scope: null,
      degraded: true,
      failure: "circuit-open",
    });
  });

  it("over any arrivals, n gateways' local quotas admit no more than the shared token bucket", () => {
    const arrival = fc.record({
      gateway: fc.integer({ min: 0, max: 2 }),
      advanceMs: fc.integer({ min: 0, max: 400 }),
      cost: fc.integer({ min: 1, max: 3 }),
    });
    fc.assert(
      fc.property(fc.array(arrival, { maxLength: 300 }), (arrivals) => {
        const clock = new ManualClock(T0);
        const gateways = [0, 1, 2].map(() => new FailurePolicy({ expectedGateways: 3, clock }));
        // Capacity 30 and rate 30/s: each share (10, 10/s) holds any cost up to 3 (no floor).
        const limit: LimitSpec = { algorithm: "token-bucket", capacity: 30, refillPerSec: 30 };
        const input = (cost: number): EnforcerInput => ({
          subject: "c:acme",
          checks: [check("ceiling", limit, "local")],
          cost,
        });
        let admittedCost = 0;
        for (const { gateway, advanceMs, cost } of arrivals) {
          clock.advance(advanceMs);
          const decision = gateways[gateway]?.decide(input(cost), "timeout");
          if (decision?.allowed) admittedCost += cost;
          const elapsedSec = (clock.nowMs() - T0) / 1000;
          expect(admittedCost).toBeLessThanOrEqual(30 + 30 * elapsedSec + 1e-6);
        }
      }),
    );
  });

  it("the local quota is bounded in keys under a flood of unique subjects", () => {
    const clock = new ManualClock(T0);
    const subject = new FailurePolicy({ expectedGateways: 3, maxLocalKeys: 500, clock });
    for (let i = 0; i < 5_000; i++) {
      subject.decide(
        { subject: `a:10.0.${i >> 8}.${i & 255}`, checks: [check("address", CEILING, "local")] },
        "timeout",
      );
    }
    expect(subject.localKeyCount).toBe(500);
  });
});
