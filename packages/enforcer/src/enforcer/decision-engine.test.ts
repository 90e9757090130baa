import { describe, expect, it } from "vitest";
import { MemoryStore } from "../limiter/stores/memory";
import { ManualTimers } from "../limiter/timers";
import type { DecideInput, LayeredDecision, LimiterStore } from "../limiter/types";
import { type PreparedSnapshot, prepareSnapshot } from "../policy/prepare";
import { exampleSnapshot, tokenBucket } from "../testing/policy-factory";
import { DecisionEngine, type DecisionEngineOptions } from "./decision-engine";

/** Wall-clock time of the tests (after the example's 2025 incident for acme). */
const WALL_T0 = Date.parse("2026-01-01T00:00:00.000Z");

/** A shared store that can be made to fail every call. */
class SwitchableStore implements LimiterStore {
  isFailing = false;
  calls = 0;
  readonly #memory: MemoryStore;

  constructor(timers: ManualTimers) {
    this.#memory = new MemoryStore({ clock: timers });
  }

  decide(input: DecideInput): Promise<LayeredDecision> {
    this.calls++;
    if (this.isFailing) return Promise.reject(new Error("connection refused"));
    return this.#memory.decide(input);
  }

  peek(input: DecideInput): Promise<LayeredDecision> {
    return this.#memory.peek(input);
  }
}

function setup(
  options: { snapshot?: PreparedSnapshot | null; engine?: Partial<DecisionEngineOptions> } = {},
) {
  const timers = new ManualTimers(1_000);
  const wall = new ManualTimers(WALL_T0);
  const store = new SwitchableStore(timers);
  const snapshot =
    options.snapshot === undefined ? prepareSnapshot(exampleSnapshot()) : options.snapshot;
  const engine = new DecisionEngine({
    store,
    snapshot: () => snapshot,
    expectedGateways: 3,
    clock: timers,
    wallClock: wall,
    timers,
    localStage: false,
    ...options.engine,
  });
  return { engine, store, timers, wall };
}

describe("DecisionEngine", () => {
  it("decides the worked example: 25 at once for a free customer admit 20, reject 5 with ~100 ms", async () => {
    const { engine } = setup();
    const results = await Promise.all(
      Array.from({ length: 25 }, () =>
        engine.check({ customerId: "initech", tier: "free", method: "GET", path: "/v1/things" }),
      ),
    );
    const rejected = results.filter((result) => !result.decision.allowed);
    expect(results.length - rejected.length).toBe(20);
    expect(rejected).toHaveLength(5);
    for (const result of rejected) {
      expect(result.subject).toBe("c:initech");
      expect(result.endpointClass).toBe("default");
      expect(result.policyVersion).toBe(7);
      expect(result.http.status).toBe(429);
      expect(result.http.headers).toMatchObject({
        RateLimit: '"tier:free";r=0;t=1',
        "Retry-After": "1",
        "X-RateLimit-Limit": "20",
        "X-RateLimit-Remaining": "0",
      });
      expect(result.http.body).toEqual({
        type: "https://iana.org/assignments/http-problem-types#quota-exceeded",
        title: "Quota exceeded",
        status: 429,
        "violated-policies": ["tier:free"],
        code: "RATE_LIMITED",
        scope: "tier:free",
        retryAfterMs: 100,
      });
    }
  });

  it("names every scope it checked, enforced and dry-run, in one decision", async () => {
    const { engine } = setup();
    const result = await engine.check({
      customerId: "initech",
      tier: "free",
      method: "GET",
      path: "/v1/search",
    });
    expect(result.decision.outcomes.map((outcome) => [outcome.scope, outcome.mode])).toEqual([
      ["tier:free", "enforce"],
      ["candidate:free-halved", "dry-run"],
      ["tier:free/endpoint:search", "enforce"],
      ["ceiling", "enforce"],
    ]);
    expect(result.cost).toBe(2);
    // The tier and search's own limit both have bursts of 20 and 18 left at cost 2: the tie goes
    // to the first listed.
    expect(result.http.headers).toMatchObject({ RateLimit: '"tier:free";r=18;t=1' });
  });

  it("keys anonymous sign-in attempts by address and route, other anonymous traffic by address", async () => {
    const { engine } = setup();
    const signIn = await engine.check({
      method: "POST",
      path: "/v1/auth/sign-in",
      clientAddress: "198.51.100.7",
    });
    const other = await engine.check({
      method: "GET",
      path: "/v1/things",
      clientAddress: "198.51.100.7",
    });
    expect(signIn.subject).toBe("a:198.51.100.7/endpoint:sign-in");
    expect(signIn.decision.outcomes.map((outcome) => outcome.scope)).toEqual([
      "address/endpoint:sign-in",
      "address",
    ]);
    expect(other.subject).toBe("a:198.51.100.7");
  });

  it("a cost given by the gateway overrides the endpoint class's", async () => {
    const { engine } = setup();
    const byClass = await engine.check({
      customerId: "initech",
      tier: "free",
      method: "GET",
      path: "/v1/reports/1",
    });
    const overridden = await engine.check({
      customerId: "initech",
      tier: "free",
      method: "GET",
      path: "/v1/reports/1",
      cost: 1,
    });
    expect(byClass.cost).toBe(10);
    expect(overridden.cost).toBe(1);
    // reports for free: bursts of 20 → 10 left after the first, 9 after the second.
    expect(overridden.http.headers["X-RateLimit-Remaining"]).toBe("9");
  });

  it("refuses a customer id outside the id character set, and a negative cost", async () => {
    const { engine } = setup();
    await expect(
      engine.check({ customerId: "a b", method: "GET", path: "/" }),
    ).rejects.toBeInstanceOf(TypeError);
    await expect(engine.check({ method: "GET", path: "/", cost: -1 })).rejects.toBeInstanceOf(
      TypeError,
    );
  });

  it("without a snapshot admits, counts the decision as no-policy, and sends no headers", async () => {
    const { engine, store } = setup({ snapshot: null });
    const result = await engine.check({ customerId: "initech", method: "GET", path: "/" });
    expect(result.decision).toMatchObject({ allowed: true, source: "no-policy", scope: null });
    expect(result.http).toEqual({ status: null, headers: {}, body: null, bodyText: null });
    expect(result.policyVersion).toBeNull();
    expect(store.calls).toBe(0);
    expect(engine.metrics.totals().decisionsBySource["no-policy"]).toBe(1);
  });

  it("without a snapshot and withoutPolicy reject, refuses with 503 and a retry, counted", async () => {
    const { engine, store } = setup({ snapshot: null, engine: { withoutPolicy: "reject" } });
    const result = await engine.check({ customerId: "initech", method: "GET", path: "/" });
    expect(result.decision).toMatchObject({
      allowed: false,
      source: "no-policy",
      reason: "store-unavailable",
      scope: "no-policy",
      retryAfterMs: 1_000,
    });
    expect(result.http.status).toBe(503);
    expect(result.http.headers["Retry-After"]).toBe("1");
    expect(store.calls).toBe(0);
    expect(engine.metrics.totals().decisionsBySource["no-policy"]).toBe(1);
  });

  it("checkNow answers a cached denial at once, without a promise, and as check would", async () => {
    const { engine, store } = setup({ engine: { localStage: {} } });
    const request = { customerId: "initech", tier: "free", method: "GET", path: "/v1/things" };
    // 20 admitted and the 21st rejected by the store: each of those a promise.
    const viaStore = Array.from({ length: 21 }, () => engine.checkNow(request));
    expect(viaStore.every((answer) => answer instanceof Promise)).toBe(true);
    const decided = await Promise.all(viaStore);
    expect(decided.map((answer) => answer.decision.allowed)).toEqual([
      ...Array.from({ length: 20 }, () => true),
      false,
    ]);
    const calls = store.calls;
    const now = engine.checkNow(request);
    expect(now).not.toBeInstanceOf(Promise);
    expect(store.calls).toBe(calls);
    const awaited = await engine.check(request);
    const answered = now as Awaited<typeof now>;
    expect(answered.decision).toMatchObject({ allowed: false, source: "denial-cache" });
    expect(answered.decision).toEqual(awaited.decision);
    expect(answered.http).toEqual(awaited.http);
    // Counted like any decision (made without the store: 0 us, in the first latency bucket).
    expect(engine.metrics.totals().decisionsBySource["denial-cache"]).toBe(2);
  });

  it("check and checkNow refuse an invalid customer id, a cached one included, and a bad cost", async () => {
    const { engine } = setup();
    const request = { customerId: "initech", tier: "free", method: "GET", path: "/v1/things" };
    await engine.check(request);
    await expect(engine.check({ ...request, customerId: "not valid!" })).rejects.toThrow(
      /is not a valid customer id/,
    );
    expect(() => engine.checkNow({ ...request, customerId: "not valid!" })).toThrow(TypeError);
    expect(() => engine.checkNow({ ...request, cost: -1 })).toThrow(/cost/);
    const { engine: withoutPolicy } = setup({ snapshot: null });
    expect(() => withoutPolicy.checkNow({ ...request, customerId: "not valid!" })).toThrow(
      /is not a valid customer id/,
    );
  });

  it("records customers' rejections (time, scope, endpoint class), not anonymous ones", async () => {
    const { engine, wall } = setup();
    for (let i = 0; i < 21; i++) {
      await engine.check({ customerId: "initech", tier: "free", method: "GET", path: "/" });
    }
    for (let i = 0; i < 101; i++) {
      await engine.check({ method: "GET", path: "/", clientAddress: "203.0.113.9" });
    }
    expect(engine.recentRejections.drain()).toEqual([
      {
        customerId: "initech",
        atMs: wall.nowMs(),
        firstAtMs: wall.nowMs(),
        count: 1,
        scope: "tier:free",
        endpointClass: "default",
      },
    ]);
  });

  it("counts a stricter dry-run candidate as would-reject without rejecting for it", async () => {
    const { engine } = setup();
    for (let i = 0; i < 15; i++) {
      const result = await engine.check({
        customerId: "initech",
        tier: "free",
        method: "GET",
        path: "/",
      });
      expect(result.decision.allowed).toBe(true);
    }
    const candidate = engine.metrics
      .totals()
      .scopes.find((counts) => counts.scope === "candidate:free-halved");
    // Bursts of 10: the first 10 would have been admitted, the 11th to 15th rejected.
    expect(candidate).toMatchObject({ allowed: 10, wouldReject: 5, rejected: 0 });
  });

  it("when the store fails, each limit does what it declares and the decision is counted degraded", async () => {
    const { engine, store } = setup();
    store.isFailing = true;
    const customer = await engine.check({
      customerId: "initech",
      tier: "free",
      method: "GET",
      path: "/",
    });
    const signIn = await engine.check({
      method: "POST",
      path: "/v1/auth/sign-in",
      clientAddress: "198.51.100.7",
    });
    expect(customer.decision).toMatchObject({ allowed: true, degraded: true, source: "fallback" });
    expect(customer.decision.outcomes.map((outcome) => outcome.fallback)).toEqual([
      "open",
      "open",
      "local",
    ]);
    expect(signIn.decision).toMatchObject({
      allowed: false,
      reason: "store-unavailable",
      scope: "address/endpoint:sign-in",
    });
    expect(signIn.http.status).toBe(503);
    expect(signIn.http.body).toMatchObject({ code: "LIMITER_UNAVAILABLE" });
    expect(engine.metrics.totals().degradedByFailure["store-error"]).toBe(2);
  });

  it("with the local stage, a rejected customer is answered locally until the reset", async () => {
    const { engine, store, timers } = setup({ engine: { localStage: {} } });
    const request = { customerId: "initech", tier: "free", method: "GET", path: "/" } as const;
    for (let i = 0; i < 21; i++) await engine.check(request);
    const callsBefore = store.calls;
    const local = await engine.check(request);
    expect(local.decision.source).toBe("denial-cache");
    expect(store.calls).toBe(callsBefore);
    timers.advance(100);
    expect((await engine.check(request)).decision).toMatchObject({
      allowed: true,
      source: "store",
    });
  });

  it("an incident override applies by the wall clock and stops at its expiry, same snapshot", async () => {
    const snapshot = prepareSnapshot(
      exampleSnapshot((input) => {
        input.incidentOverrides = [
          {
            id: "inc-1",
            customerId: "initech",
            endpointClass: null,
            limit: tokenBucket(100, 10),
            startsAt: "2025-12-31T23:00:00Z",
            expiresAt: "2026-01-01T00:00:01Z",
            owner: "dana@limitplane.example",
            reason: "backfill",
          },
        ];
      }),
    );
    const { engine, wall } = setup({ snapshot });
    const request = { customerId: "initech", tier: "free", method: "GET", path: "/" } as const;
    expect((await engine.check(request)).decision.outcomes[0]?.scope).toBe("incident:inc-1");
    wall.advance(1_000);
    expect((await engine.check(request)).decision.outcomes[0]?.scope).toBe("tier:free");
  });
});
