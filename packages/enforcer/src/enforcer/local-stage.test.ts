import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../limiter/clock";
import { MemoryStore } from "../limiter/stores/memory";
import type { LimitSpec } from "../limiter/types";
import { buildRateLimitResponse } from "./http-headers";
import { DenialCache, denialKeyOf, FloodGuard, LocalStage } from "./local-stage";
import {
  type EnforcerCheck,
  type EnforcerDecision,
  type EnforcerInput,
  fromStoreDecision,
} from "./types";

const T0 = 1_700_000_000_000;
const PRO: LimitSpec = { algorithm: "token-bucket", capacity: 20, refillPerSec: 10 };
const REPORTS_WINDOW_MS = 10_000;
const REPORTS: LimitSpec = { algorithm: "fixed-window", limit: 3, windowMs: REPORTS_WINDOW_MS };
const SEARCH: LimitSpec = { algorithm: "fixed-window", limit: 100, windowMs: 10_000 };

function enforce(scope: string, limit: LimitSpec, bucket = scope): EnforcerCheck {
  return { scope, bucket, limit, mode: "enforce", onStoreFailure: "open" };
}

const ACCOUNT = enforce("tier:pro", PRO, "account");
const REPORTS_CHECK = enforce("tier:pro/endpoint:reports", REPORTS, "endpoint:reports");
const SEARCH_CHECK = enforce("tier:pro/endpoint:search", SEARCH, "endpoint:search");

function reportsRequest(subject = "c:acme", cost = 1): EnforcerInput {
  return { subject, checks: [ACCOUNT, REPORTS_CHECK], cost };
}

function searchRequest(subject = "c:acme", cost = 1): EnforcerInput {
  return { subject, checks: [ACCOUNT, SEARCH_CHECK], cost };
}

/** A shared store and a denial cache on one driven clock, wired as the runtime wires them. */
function setup(maxEntries = 10_000) {
  const clock = new ManualClock(T0);
  const shared = new MemoryStore({ clock });
  const cache = new DenialCache({ clock, maxEntries });
  /** The cache's answer, or the shared store's (recorded in the cache). */
  const decide = (input: EnforcerInput, sentAtMs = clock.nowMs()): EnforcerDecision => {
    const cached = cache.find(input);
    if (cached !== null) return cached;
    const decision = fromStoreDecision(shared.decideSync(input));
    cache.record(input, decision, sentAtMs);
    return decision;
  };
  return { clock, shared, cache, decide };
}

describe("DenialCache", () => {
  it("rejects the same subject's next request on the rejecting limit without asking the store", () => {
    const { cache, decide } = setup();
    for (let i = 0; i < 3; i++) expect(decide(reportsRequest()).allowed).toBe(true);
    const shared = decide(reportsRequest());
    expect(shared).toMatchObject({ allowed: false, source: "store" });
    expect(cache.find(reportsRequest())).toMatchObject({
      allowed: false,
      source: "denial-cache",
      degraded: false,
      reason: "limit-exceeded",
      scope: "tier:pro/endpoint:reports",
      retryAfterMs: shared.retryAfterMs,
    });
  });

  it("a cached denial never outlives the real reset", () => {
    // The worked example: 20 at once, the 21st 50 ms later is told to wait 50 ms.
    const { clock, cache, shared, decide } = setup();
    const input: EnforcerInput = { subject: "c:acme", checks: [ACCOUNT] };
    for (let i = 0; i < 20; i++) decide(input);
    clock.advance(50);
    expect(decide(input)).toMatchObject({ source: "store", retryAfterMs: 50 });
    clock.advance(49);
    expect(cache.find(input)).toMatchObject({ retryAfterMs: 1 });
    clock.advance(1);
    expect(cache.find(input)).toBeNull();
    expect(shared.peekSync(input).allowed).toBe(true);
    expect(cache.size).toBe(0);
  });

  it("is anchored at when the request was sent, not when the answer arrived", () => {
    const { clock, cache, shared } = setup();
    const input: EnforcerInput = { subject: "c:acme", checks: [ACCOUNT] };
    for (let i = 0; i < 20; i++) shared.decideSync(input);
    clock.advance(50);
    const sentAtMs = clock.nowMs();
    const rejection = fromStoreDecision(shared.decideSync(input));
    clock.advance(30); // the answer took 30 ms to come back
    cache.record(input, rejection, sentAtMs);
    expect(cache.find(input)?.retryAfterMs).toBe(20);
    clock.advance(20);
    expect(cache.find(input)).toBeNull();
  });

  it("expires at the earlier of retryAfterMs and resetAfterMs", () => {
    const { clock, cache } = setup();
    const input: EnforcerInput = { subject: "c:acme", checks: [ACCOUNT] };
    const decision: EnforcerDecision = {
      allowed: false,
      limit: 20,
      remaining: 0,
      retryAfterMs: 900,
      resetAfterMs: 300,
      reason: "limit-exceeded",
      scope: "tier:pro",
      outcomes: [
        {
          allowed: false,
          limit: 20,
          remaining: 0,
          retryAfterMs: 900,
          resetAfterMs: 300,
          reason: "limit-exceeded",
          scope: "tier:pro",
          mode: "enforce",
          fallback: null,
        },
      ],
      source: "store",
      degraded: false,
      failure: null,
    };
    cache.record(input, decision, clock.nowMs());
    clock.advance(299);
    expect(cache.find(input)).not.toBeNull();
    clock.advance(1);
    expect(cache.find(input)).toBeNull();
  });

  it("an endpoint's denial does not reject the same customer's other endpoint classes", () => {
    const { cache, decide } = setup();
    for (let i = 0; i < 4; i++) decide(reportsRequest());
    expect(cache.find(reportsRequest())).not.toBeNull();
    expect(cache.find(searchRequest())).toBeNull();
    expect(decide(searchRequest())).toMatchObject({ allowed: true, source: "store" });
  });

  it("an account denial rejects every endpoint class of that customer, and only that customer", () => {
    const { cache, decide } = setup();
    for (let i = 0; i < 21; i++) decide(searchRequest());
    expect(cache.find(searchRequest())?.scope).toBe("tier:pro");
    expect(cache.find(reportsRequest())?.scope).toBe("tier:pro");
    expect(cache.find(searchRequest("c:other"))).toBeNull();
  });

  it("a cheaper request than the one refused still goes to the store", () => {
    const { cache, decide } = setup();
    const input = (cost: number): EnforcerInput => ({ subject: "c:acme", checks: [ACCOUNT], cost });
    decide(input(17)); // 3 tokens left
    expect(decide(input(5))).toMatchObject({ allowed: false, source: "store" });
    expect(cache.find(input(5))).not.toBeNull();
    expect(cache.find(input(6))).not.toBeNull();
    expect(cache.find(input(3))).toBeNull();
    expect(decide(input(3))).toMatchObject({ allowed: true, source: "store" });
  });

  it("a raised limit on the same bucket never meets the denial recorded under the old one", () => {
    const { cache, decide } = setup();
    for (let i = 0; i < 4; i++) decide(reportsRequest());
    const raised = enforce(
      "incident:inc-1",
      { algorithm: "fixed-window", limit: 30, windowMs: 10_000 },
      "endpoint:reports",
    );
    expect(cache.find({ subject: "c:acme", checks: [ACCOUNT, raised] })).toBeNull();
    expect(denialKeyOf("c:acme", raised)).not.toBe(denialKeyOf("c:acme", REPORTS_CHECK));
  });

  it.each<[string, Partial<EnforcerDecision>]>([
    ["a degraded decision", { source: "fallback", degraded: true, failure: "timeout" }],
    ["a flood-guard decision", { source: "flood-guard" }],
    ["a denial-cache decision", { source: "denial-cache" }],
  ])("records nothing from %s: only the shared store's word counts", (_name, overrides) => {
    const { clock, cache, shared } = setup();
    const input: EnforcerInput = { subject: "c:acme", checks: [ACCOUNT] };
    for (let i = 0; i < 20; i++) shared.decideSync(input);
    const rejection = { ...fromStoreDecision(shared.decideSync(input)), ...overrides };
    cache.record(input, rejection, clock.nowMs());
    expect(cache.size).toBe(0);
  });

  it("records neither dry-run rejections nor cost-exceeds-capacity", () => {
    const { clock, cache, shared } = setup();
    const strict: EnforcerCheck = { ...enforce("candidate:c1", REPORTS), mode: "dry-run" };
    const input: EnforcerInput = { subject: "c:acme", checks: [ACCOUNT, strict] };
    for (let i = 0; i < 5; i++) {
      cache.record(input, fromStoreDecision(shared.decideSync(input)), clock.nowMs());
    }
    const tooBig: EnforcerInput = { subject: "c:acme", checks: [ACCOUNT], cost: 21 };
    cache.record(tooBig, fromStoreDecision(shared.decideSync(tooBig)), clock.nowMs());
    expect(cache.size).toBe(0);
  });

  it.each([
    [1, 1],
    [2, 2],
    [3, 2],
    [4, 4],
  ])(
    "is bounded per denial, not per subject: maxEntries %i holds %i of two subjects' two denials each",
    (maxEntries, held) => {
      const { clock, cache, shared } = setup(maxEntries);
      const one: LimitSpec = { algorithm: "fixed-window", limit: 1, windowMs: 60_000 };
      const checks = [enforce("first", one), enforce("second", one)];
      for (const subject of ["a:1", "a:2"]) {
        const input: EnforcerInput = { subject, checks };
        shared.decideSync(input);
        cache.record(input, fromStoreDecision(shared.decideSync(input)), clock.nowMs());
        expect(cache.size).toBeLessThanOrEqual(maxEntries);
      }
      expect(cache.size).toBe(held);
      // The most recently rejected subject is always still rejected locally.
      expect(cache.find({ subject: "a:2", checks })).not.toBeNull();
      if (maxEntries < 4) expect(cache.find({ subject: "a:1", checks })).toBeNull();
    },
  );

  it("is bounded: 100k distinct rejected subjects leave at most maxEntries denials", () => {
    const { clock, cache, shared } = setup(1_000);
    const tight: EnforcerCheck = enforce("address", {
      algorithm: "fixed-window",
      limit: 1,
      windowMs: 60_000,
    });
    for (let i = 0; i < 100_000; i++) {
      const input: EnforcerInput = { subject: `a:${i}`, checks: [tight] };
      shared.decideSync(input);
      cache.record(input, fromStoreDecision(shared.decideSync(input)), clock.nowMs());
    }
    expect(cache.size).toBe(1_000);
    expect(cache.find({ subject: "a:99999", checks: [tight] })).not.toBeNull();
    expect(cache.find({ subject: "a:0", checks: [tight] })).toBeNull();
    // 200k decisions: well under a second alone, several on a shared, busy core.
  }, 60_000);
});

describe("DenialCache: properties against the shared store", () => {
  const ALGORITHMS: LimitSpec[] = [
    { algorithm: "token-bucket", capacity: 4, refillPerSec: 5 },
    { algorithm: "leaky-meter", burst: 3, drainPerSec: 4 },
    { algorithm: "fixed-window", limit: 3, windowMs: 700 },
    { algorithm: "sliding-window", limit: 4, windowMs: 900 },
    { algorithm: "sliding-log", limit: 3, windowMs: 600 },
  ];
  const arrival = fc.record({
    gateway: fc.integer({ min: 0, max: 1 }),
    subject: fc.constantFrom("c:a", "c:b"),
    endpoint: fc.integer({ min: 0, max: 1 }),
    cost: fc.integer({ min: 1, max: 3 }),
    // Mostly short gaps, so arrivals often land right around a denial's expiry.
    advanceMs: fc.oneof(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 300 })),
    requestLatencyMs: fc.integer({ min: 0, max: 20 }),
    responseLatencyMs: fc.integer({ min: 0, max: 20 }),
  });

  it("never rejects a request the shared store would admit, whatever the algorithm", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...ALGORITHMS),
        fc.constantFrom(...ALGORITHMS),
        fc.array(arrival, { maxLength: 150 }),
        (accountLimit, endpointLimit, arrivals) => {
          const clock = new ManualClock(T0);
          const shared = new MemoryStore({ clock });
          // Two gateways, each with its own cache, in front of one shared store.
          const caches = [new DenialCache({ clock }), new DenialCache({ clock })];
          const checksFor = (endpoint: number): EnforcerCheck[] => [
            enforce("tier:pro", accountLimit, "account"),
            enforce(`tier:pro/endpoint:e${endpoint}`, endpointLimit, `endpoint:e${endpoint}`),
          ];
          for (const arrival of arrivals) {
            const { gateway, subject, endpoint, cost, advanceMs } = arrival;
            clock.advance(advanceMs);
            const cache = caches[gateway];
            if (cache === undefined) continue;
            const input: EnforcerInput = { subject, checks: checksFor(endpoint), cost };
            const cached = cache.find(input);
            if (cached !== null) {
              expect(cached.allowed).toBe(false);
              expect(shared.peekSync(input).allowed).toBe(false);
              continue;
            }
            // Sent now; the store decides a little later; the answer arrives later still.
            const sentAtMs = clock.nowMs();
            clock.advance(arrival.requestLatencyMs);
            const decision = fromStoreDecision(shared.decideSync(input));
            clock.advance(arrival.responseLatencyMs);
            cache.record(input, decision, sentAtMs);
          }
        },
      ),
      { numRuns: 400 },
    );
  });
});

describe("FloodGuard", () => {
  it("sheds a flood beyond twice the limit with no store call, reporting the real limit", () => {
    const clock = new ManualClock(T0);
    const guard = new FloodGuard({ clock });
    const input: EnforcerInput = { subject: "c:acme", checks: [ACCOUNT] };
    for (let i = 0; i < 40; i++) expect(guard.check(input)).toBeNull();
    const rejection = guard.check(input);
    expect(rejection).toMatchObject({
      allowed: false,
      source: "flood-guard",
      scope: "tier:pro",
      limit: 20,
      remaining: 0,
      retryAfterMs: 50, // one token of the doubled rate, 20 per second
    });
    clock.advance(50);
    expect(guard.check(input)).toBeNull();
  });

  it.each([1, 1.5, 3])(
    "a multiplier of %d lets that many times the burst through",
    (multiplier) => {
      const guard = new FloodGuard({ clock: new ManualClock(T0), multiplier });
      const input: EnforcerInput = { subject: "c:acme", checks: [ACCOUNT] };
      let passed = 0;
      while (guard.check(input) === null) passed++;
      expect(passed).toBe(Math.floor(20 * multiplier));
    },
  );

  it("does not guard dry-run limits", () => {
    const guard = new FloodGuard({ clock: new ManualClock(T0) });
    const strict: EnforcerCheck = {
      ...enforce("candidate:c1", { algorithm: "fixed-window", limit: 1, windowMs: 60_000 }),
      mode: "dry-run",
    };
    for (let i = 0; i < 10; i++) {
      expect(guard.check({ subject: "c:acme", checks: [strict] })).toBeNull();
    }
    expect(guard.keyCount).toBe(0);
  });

  it("stays within its key bound under a flood of unique subjects", () => {
    const guard = new FloodGuard({ clock: new ManualClock(T0), maxKeys: 2_000 });
    for (let i = 0; i < 50_000; i++) guard.check({ subject: `a:${i}`, checks: [ACCOUNT] });
    expect(guard.keyCount).toBe(2_000);
  });

  it.each([0.5, 0, Number.NaN, 5_000])("refuses a multiplier of %d", (multiplier) => {
    expect(() => new FloodGuard({ multiplier })).toThrow(RangeError);
  });
});

describe("LocalStage", () => {
  it("never lets more through than the shared limit: it only rejects, the store alone admits", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            advanceMs: fc.integer({ min: 0, max: 3_000 }),
            cost: fc.integer({ min: 1, max: 3 }),
          }),
          { maxLength: 200 },
        ),
        (arrivals) => {
          const clock = new ManualClock(T0);
          const stage = new LocalStage({ clock });
          const shared = new MemoryStore({ clock });
          let admittedCost = 0;
          const admittedPerWindow = new Map<number, number>();
          for (const { advanceMs, cost } of arrivals) {
            clock.advance(advanceMs);
            const input = reportsRequest("c:acme", cost);
            const sentAtMs = clock.nowMs();
            const local = stage.check(input);
            if (local !== null) {
              expect(local.allowed).toBe(false);
              continue;
            }
            const decision = fromStoreDecision(shared.decideSync(input));
            stage.recordSharedDecision(input, decision, sentAtMs);
            if (!decision.allowed) continue;
            admittedCost += cost;
            const window = Math.floor(clock.nowMs() / REPORTS_WINDOW_MS);
            admittedPerWindow.set(window, (admittedPerWindow.get(window) ?? 0) + cost);
          }
          // The reports limit: 3 per fixed 10 s window. The account: 20 + 10 per second.
          for (const perWindow of admittedPerWindow.values())
            expect(perWindow).toBeLessThanOrEqual(3);
          expect(admittedCost).toBeLessThanOrEqual(20 + (10 * (clock.nowMs() - T0)) / 1000);
        },
      ),
    );
  });

  it("consults the denial cache before the flood guard, so a known denial spends no budget", () => {
    const clock = new ManualClock(T0);
    const stage = new LocalStage({ clock });
    const shared = new MemoryStore({ clock });
    const input = reportsRequest();
    for (let i = 0; i < 4; i++) {
      const sentAtMs = clock.nowMs();
      if (stage.check(input) === null) {
        stage.recordSharedDecision(input, fromStoreDecision(shared.decideSync(input)), sentAtMs);
      }
    }
    for (let i = 0; i < 100; i++) expect(stage.check(input)?.source).toBe("denial-cache");
    expect(stage.floodGuard?.keyCount).toBe(2);
  });

  it("either part can be turned off", () => {
    const clock = new ManualClock(T0);
    const withoutGuard = new LocalStage({ clock, floodGuard: false });
    const input: EnforcerInput = { subject: "c:acme", checks: [ACCOUNT] };
    for (let i = 0; i < 100; i++) expect(withoutGuard.check(input)).toBeNull();
    expect(withoutGuard.floodGuard).toBeNull();
    const withoutCache = new LocalStage({ clock, denialCache: false });
    expect(withoutCache.denialCache).toBeNull();
  });

  it("a local rejection carries the full HTTP contract", () => {
    const { decide } = setup();
    for (let i = 0; i < 4; i++) decide(reportsRequest());
    const cached = decide(reportsRequest());
    expect(cached.source).toBe("denial-cache");
    const response = buildRateLimitResponse(cached, reportsRequest().checks);
    expect(response.status).toBe(429);
    expect(response.headers).toMatchObject({
      RateLimit: '"tier:pro/endpoint:reports";r=0;t=10',
      "Retry-After": "10",
      "X-RateLimit-Limit": "3",
    });
    expect(response.body).toEqual({
      type: "https://iana.org/assignments/http-problem-types#quota-exceeded",
      title: "Quota exceeded",
      status: 429,
      "violated-policies": ["tier:pro/endpoint:reports"],
      code: "RATE_LIMITED",
      scope: "tier:pro/endpoint:reports",
      retryAfterMs: 10_000,
    });
  });
});
