import { describe, expect, it } from "vitest";
import { MemoryStore } from "../limiter/stores/memory";
import { ManualTimers } from "../limiter/timers";
import type { LimitCheck, LimitSpec } from "../limiter/types";
import { type PreparedSnapshot, prepareSnapshot } from "../policy/prepare";
import { exampleSnapshot, tokenBucket } from "../testing/policy-factory";
import { DecisionEngine } from "./decision-engine";
import {
  buildRateLimitResponse,
  type HttpDecision,
  type HttpOutcome,
  type RateLimitHttpResult,
} from "./http-headers";
import { decimalDigitsOf, RejectionResponses } from "./rejection-responses";

const TIER: LimitSpec = { algorithm: "token-bucket", capacity: 20, refillPerSec: 10 };
const CEILING: LimitSpec = { algorithm: "fixed-window", limit: 1000, windowMs: 60_000 };

function frozenChecks(...checks: LimitCheck[]): readonly LimitCheck[] {
  return Object.freeze(checks.map((check) => Object.freeze(check)));
}

const CHECKS = frozenChecks(
  { scope: "tier:pro", bucket: "account", limit: TIER, mode: "enforce" },
  { scope: "candidate:x", bucket: "dry-run/candidate:x", limit: TIER, mode: "dry-run" },
  { scope: "ceiling", bucket: "ceiling", limit: CEILING, mode: "enforce" },
);

function outcome(scope: string, fields: Partial<HttpOutcome> = {}): HttpOutcome {
  return {
    allowed: true,
    reason: null,
    scope,
    mode: scope.startsWith("candidate") ? "dry-run" : "enforce",
    limit: scope === "ceiling" ? 1000 : 20,
    remaining: 5,
    retryAfterMs: 0,
    resetAfterMs: 1_000,
    ...fields,
  };
}

/** A rejection by the tier, waiting `retryAfterMs`, the other limits as given. */
function tierRejection(retryAfterMs: number, fields: Partial<HttpOutcome> = {}): HttpDecision {
  return {
    allowed: false,
    scope: "tier:pro",
    retryAfterMs,
    reason: fields.reason ?? "limit-exceeded",
    outcomes: [
      outcome("tier:pro", {
        allowed: false,
        reason: "limit-exceeded",
        remaining: 0,
        retryAfterMs,
        resetAfterMs: retryAfterMs + 1_500,
        ...fields,
      }),
      outcome("candidate:x", { allowed: false, reason: "limit-exceeded", remaining: 0 }),
      outcome("ceiling"),
    ],
  };
}

/** The bytes Node would write for a response: status, headers in order, body. */
function wireOf(http: RateLimitHttpResult): string {
  const body = http.bodyText ?? "";
  const raw = http.rawHeaders ?? [
    "Content-Length",
    String(Buffer.byteLength(body)),
    ...Object.entries(http.headers).flat(),
  ];
  return `${http.status}\n${raw.join("\n")}\n\n${body}`;
}

describe("RejectionResponses", () => {
  it.each<[string, HttpDecision]>([
    ["a rejection in its first second", tierRejection(100)],
    ["a rejection waiting whole seconds", tierRejection(4_000)],
    ["a wait of one more digit in the same second", tierRejection(10_000)],
    ["a rejection with units left (a request costing more)", tierRejection(300, { remaining: 3 })],
    [
      "a request costing more than the capacity (no Retry-After)",
      tierRejection(0, { reason: "cost-exceeds-capacity" }),
    ],
  ])("a kept 429 equals a freshly built one, byte for byte: %s", (_name, decision) => {
    const responses = new RejectionResponses();
    const fresh = buildRateLimitResponse(decision, CHECKS);
    const first = responses.responseFor(decision, CHECKS);
    const second = responses.responseFor(decision, CHECKS);
    for (const kept of [first, second]) {
      expect(kept.rawHeaders).toBeDefined();
      expect(kept.status).toBe(fresh.status);
      expect(Object.entries(kept.headers)).toEqual(Object.entries(fresh.headers));
      expect(kept.body).toEqual(fresh.body);
      expect(kept.bodyText).toBe(fresh.bodyText);
      expect(wireOf(kept)).toBe(wireOf({ ...fresh, rawHeaders: undefined }));
    }
    // The second was made from the first's entry.
    expect(second.rawHeaders).toBe(first.rawHeaders);
    expect(responses.size).toBe(1);
  });

  it("each millisecond of a second gets its own body, from one entry", () => {
    const responses = new RejectionResponses();
    const kept = [1_001, 1_500, 1_999, 2_000].map((ms) => {
      const decision = tierRejection(ms, { resetAfterMs: 5_000 });
      const http = responses.responseFor(decision, CHECKS);
      expect(wireOf(http)).toBe(wireOf(buildRateLimitResponse(decision, CHECKS)));
      return http;
    });
    expect(new Set(kept.map((http) => http.rawHeaders)).size).toBe(1);
    expect(new Set(kept.map((http) => http.bodyText)).size).toBe(4);
    expect(responses.size).toBe(1);
  });

  it.each<[number, "upwards" | "downwards"]>([
    [1, "upwards"],
    [2, "downwards"],
    [11, "upwards"],
    [8_640, "downwards"],
  ])(
    "a kept body spells every millisecond of second %s exactly, whichever came first (%s)",
    (second, order) => {
      const responses = new RejectionResponses();
      const milliseconds = Array.from({ length: 1_000 }, (_, i) => (second - 1) * 1_000 + 1 + i);
      if (order === "downwards") milliseconds.reverse();
      for (const ms of milliseconds) {
        const decision = tierRejection(ms, { resetAfterMs: second * 1_000 + 500 });
        const fresh = buildRateLimitResponse(decision, CHECKS);
        const kept = responses.responseFor(decision, CHECKS);
        expect(kept.bodyText).toBe(fresh.bodyText);
        expect(kept.rawHeaders?.[1]).toBe(String(Buffer.byteLength(fresh.bodyText ?? "")));
      }
    },
  );

  it("another second, reset or remaining is another entry", () => {
    const responses = new RejectionResponses();
    responses.responseFor(tierRejection(1_500, { resetAfterMs: 5_000 }), CHECKS);
    responses.responseFor(tierRejection(2_500, { resetAfterMs: 5_000 }), CHECKS);
    responses.responseFor(tierRejection(1_500, { resetAfterMs: 6_000 }), CHECKS);
    responses.responseFor(tierRejection(1_500, { resetAfterMs: 5_000, remaining: 2 }), CHECKS);
    expect(responses.size).toBe(4);
  });

  it.each<[string, HttpDecision, readonly LimitCheck[]]>([
    [
      "an admission",
      {
        allowed: true,
        scope: "tier:pro",
        retryAfterMs: 0,
        reason: null,
        outcomes: [outcome("tier:pro"), outcome("ceiling")],
      },
      CHECKS,
    ],
    [
      "a fail-closed 503",
      {
        allowed: false,
        scope: "ceiling",
        retryAfterMs: 1_000,
        reason: "store-unavailable",
        outcomes: [outcome("ceiling", { allowed: false, reason: "store-unavailable" })],
      },
      CHECKS,
    ],
    [
      "two limits violated at once",
      {
        ...tierRejection(500),
        outcomes: [
          outcome("tier:pro", { allowed: false, reason: "limit-exceeded", retryAfterMs: 500 }),
          outcome("ceiling", { allowed: false, reason: "limit-exceeded", retryAfterMs: 400 }),
        ],
      },
      CHECKS,
    ],
    ["a fractional wait", tierRejection(250.5), CHECKS],
    ["checks that are not frozen", tierRejection(250), [...CHECKS]],
  ])("builds fresh and keeps nothing for %s", (_name, decision, checks) => {
    const responses = new RejectionResponses();
    const http = responses.responseFor(decision, checks);
    expect(http).toEqual(buildRateLimitResponse(decision, checks));
    expect(http.rawHeaders).toBeUndefined();
    expect(responses.size).toBe(0);
  });

  it("holds at most maxPerLimit entries per list of checks", () => {
    const responses = new RejectionResponses({ maxPerLimit: 3 });
    for (let second = 1; second <= 10; second++) {
      const decision = tierRejection(second * 1_000);
      expect(wireOf(responses.responseFor(decision, CHECKS))).toBe(
        wireOf(buildRateLimitResponse(decision, CHECKS)),
      );
      expect(responses.size).toBeLessThanOrEqual(3);
    }
  });

  it("clear() forgets every entry", () => {
    const responses = new RejectionResponses();
    const first = responses.responseFor(tierRejection(700), CHECKS);
    responses.clear();
    expect(responses.size).toBe(0);
    const again = responses.responseFor(tierRejection(700), CHECKS);
    expect(again.rawHeaders).not.toBe(first.rawHeaders);
    expect(again.rawHeaders).toEqual(first.rawHeaders);
  });

  it.each([0, -1, 1.5, Number.NaN])("refuses maxPerLimit %s, naming it", (maxPerLimit) => {
    expect(() => new RejectionResponses({ maxPerLimit })).toThrow(/maxPerLimit/);
  });
});

describe("decimalDigitsOf", () => {
  it.each([
    0,
    1,
    9,
    10,
    99,
    100,
    999,
    1_000,
    8_639_999,
    86_400_000,
    2 ** 31,
    Number.MAX_SAFE_INTEGER,
    1e20,
    99_999_999_999_999_980_000,
    1e21,
    1.5e21,
    1e300,
  ])("counts what String writes for %s", (n) => {
    expect(decimalDigitsOf(n)).toBe(String(n).length);
  });
});

describe("the engine's kept 429s and the policy", () => {
  it("a policy change is answered with the new policy's 429, not a kept one", async () => {
    const timers = new ManualTimers(1_000);
    const burstOf = (capacity: number): PreparedSnapshot =>
      prepareSnapshot(
        exampleSnapshot(
          (policy) => {
            const free = policy.tiers.find((tier) => tier.name === "free");
            if (free !== undefined) free.limit = tokenBucket(capacity, 1);
          },
          { version: capacity },
        ),
      );
    let snapshot = burstOf(12);
    const engine = new DecisionEngine({
      store: new MemoryStore({ clock: timers }),
      snapshot: () => snapshot,
      expectedGateways: 1,
      clock: timers,
      wallClock: new ManualTimers(Date.parse("2026-01-01T00:00:00.000Z")),
      timers,
      localStage: false,
      leases: false,
    });
    const request = { customerId: "initech", tier: "free", method: "GET", path: "/v1/things" };
    const rejectionOf = async () => {
      for (let n = 0; n < 20; n++) {
        const result = await engine.check(request);
        if (!result.decision.allowed) return result;
      }
      throw new Error("never rejected");
    };
    const before = await rejectionOf();
    const keptBefore = (await engine.check(request)).http;
    expect(keptBefore.rawHeaders).toBe(before.http.rawHeaders);
    expect(before.http.headers["RateLimit-Policy"]).toContain('"tier:free";q=12;w=12');

    snapshot = burstOf(13);
    const after = await rejectionOf();
    expect(after.http.headers["RateLimit-Policy"]).toContain('"tier:free";q=13;w=13');
    expect(after.http.rawHeaders).not.toBe(before.http.rawHeaders);
    expect(wireOf(after.http)).toBe(wireOf(buildRateLimitResponse(after.decision, after.checks)));
  });
});
