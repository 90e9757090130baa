import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../limiter/clock";
import { MemoryStore } from "../limiter/stores/memory";
import type { LayeredDecision, LimitCheck, LimitSpec } from "../limiter/types";
import { checkRateLimitContract } from "../testing/http-contract";
import {
  buildRateLimitResponse,
  formatRateLimitPolicy,
  type HttpDecision,
  quotaPolicyOf,
  retryAfterSeconds,
} from "./http-headers";
import { serializeSfInteger, serializeSfString } from "./structured-fields";

const T0 = 1_700_000_000_000;

/** The seed's worked example: bursts of 20, 10 per second. */
const PRO: LimitSpec = { algorithm: "token-bucket", capacity: 20, refillPerSec: 10 };
const CEILING: LimitSpec = { algorithm: "fixed-window", limit: 1000, windowMs: 60_000 };
const REPORTS: LimitSpec = { algorithm: "sliding-window", limit: 5, windowMs: 10_000 };

function enforce(scope: string, limit: LimitSpec, bucket = scope): LimitCheck {
  return { scope, bucket, limit, mode: "enforce" };
}

function dryRun(scope: string, limit: LimitSpec): LimitCheck {
  return { scope, bucket: `dry-run/${scope}`, limit, mode: "dry-run" };
}

function storeAt(nowMs: number): { store: MemoryStore; clock: ManualClock } {
  const clock = new ManualClock(nowMs);
  return { store: new MemoryStore({ clock }), clock };
}

describe("RateLimit-Policy: quota policies per algorithm (draft-10 §3.1)", () => {
  it.each<[string, LimitSpec, number, number]>([
    ["token bucket: q = capacity, w = capacity / rate", PRO, 20, 2],
    [
      "token bucket, w rounded up",
      { algorithm: "token-bucket", capacity: 20, refillPerSec: 3 },
      20,
      7,
    ],
    [
      "token bucket, binary noise is not a second",
      { algorithm: "token-bucket", capacity: 3, refillPerSec: 0.1 },
      3,
      30,
    ],
    [
      "token bucket faster than its capacity: w at least 1",
      { algorithm: "token-bucket", capacity: 5, refillPerSec: 100 },
      5,
      1,
    ],
    [
      "leaky meter: q = burst, w = burst / drain",
      { algorithm: "leaky-meter", burst: 30, drainPerSec: 5 },
      30,
      6,
    ],
    ["fixed window: q = limit, w = window", CEILING, 1000, 60],
    ["sliding log", { algorithm: "sliding-log", limit: 7, windowMs: 3_600_000 }, 7, 3600],
    ["sliding window", REPORTS, 5, 10],
    [
      "a window of 1,500 ms reads as 2 s",
      { algorithm: "fixed-window", limit: 3, windowMs: 1500 },
      3,
      2,
    ],
    [
      "a sub-second window reads as 1 s",
      { algorithm: "fixed-window", limit: 5, windowMs: 100 },
      5,
      1,
    ],
  ])("%s", (_name, spec, quota, windowSec) => {
    expect(quotaPolicyOf(spec)).toEqual({ quota, windowSec });
  });

  it("never advertises a sustained rate above the real one", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1_000_000_000 }),
        fc.double({ min: 0.000_001, max: 1_000_000_000, noNaN: true }),
        (capacity, refillPerSec) => {
          const { quota, windowSec } = quotaPolicyOf({
            algorithm: "token-bucket",
            capacity,
            refillPerSec,
          });
          expect(quota).toBe(capacity);
          expect(Number.isInteger(windowSec) && windowSec >= 1).toBe(true);
          expect(quota / windowSec).toBeLessThanOrEqual(refillPerSec * (1 + 1e-9));
        },
      ),
    );
  });

  it("lists every enforced limit in order and leaves dry-run limits out", () => {
    expect(
      formatRateLimitPolicy([
        enforce("tier:pro", PRO, "account"),
        dryRun("candidate:c1", PRO),
        enforce("ceiling", CEILING),
      ]),
    ).toBe('"tier:pro";q=20;w=2, "ceiling";q=1000;w=60');
  });

  it("is absent when no limit is enforced (the list must be non-empty)", () => {
    expect(formatRateLimitPolicy([])).toBeNull();
    expect(formatRateLimitPolicy([dryRun("candidate:c1", PRO)])).toBeNull();
  });
});

describe("the HTTP contract: exact headers", () => {
  it("an admission carries the policy and the binding limit's remaining and reset", () => {
    const { store } = storeAt(T0);
    const checks = [enforce("tier:pro", PRO, "account")];
    const decision = store.decideSync({ subject: "c:acme", checks });
    expect(buildRateLimitResponse(decision, checks)).toEqual({
      status: null,
      headers: {
        "RateLimit-Policy": '"tier:pro";q=20;w=2',
        RateLimit: '"tier:pro";r=19;t=1',
        "X-RateLimit-Limit": "20",
        "X-RateLimit-Remaining": "19",
        "X-RateLimit-Reset": "1",
      },
      body: null,
      bodyText: null,
    });
  });

  const QUOTA_BODY = {
    type: "https://iana.org/assignments/http-problem-types#quota-exceeded",
    title: "Quota exceeded",
    status: 429,
    "violated-policies": ["tier:pro"],
    code: "RATE_LIMITED",
    scope: "tier:pro",
    retryAfterMs: 50,
  };

  it("a rejection is 429 with Retry-After rounded up, RateLimit t equal to it, and the body", () => {
    // The worked minute: 20 at once, then one more 50 ms later finds 0.5 tokens.
    const { store, clock } = storeAt(T0);
    const checks = [enforce("tier:pro", PRO, "account")];
    for (let i = 0; i < 20; i++) store.decideSync({ subject: "c:acme", checks });
    clock.advance(50);
    const decision = store.decideSync({ subject: "c:acme", checks });
    expect(decision.retryAfterMs).toBe(50);
    expect(buildRateLimitResponse(decision, checks)).toEqual({
      status: 429,
      headers: {
        "RateLimit-Policy": '"tier:pro";q=20;w=2',
        RateLimit: '"tier:pro";r=0;t=1',
        "X-RateLimit-Limit": "20",
        "X-RateLimit-Remaining": "0",
        // 19.5 tokens missing at 10 per second: full again in 1,950 ms.
        "X-RateLimit-Reset": "2",
        "Retry-After": "1",
        "Content-Type": "application/problem+json",
      },
      body: QUOTA_BODY,
      bodyText: JSON.stringify(QUOTA_BODY),
    });
  });

  it("with several limits, the one with the least remaining is reported, all are listed", () => {
    const { store } = storeAt(T0);
    const checks = [
      enforce("tier:pro", PRO, "account"),
      enforce("tier:pro/endpoint:reports", REPORTS, "endpoint:reports"),
      enforce("ceiling", CEILING),
    ];
    store.decideSync({ subject: "c:acme", checks, cost: 2 });
    const decision = store.decideSync({ subject: "c:acme", checks, cost: 2 });
    expect(buildRateLimitResponse(decision, checks).headers).toEqual({
      "RateLimit-Policy":
        '"tier:pro";q=20;w=2, "tier:pro/endpoint:reports";q=5;w=10, "ceiling";q=1000;w=60',
      // A sliding window counter is empty again only once this window's count has also left
      // the next window's estimate: 20 s at the start of a 10 s window.
      RateLimit: '"tier:pro/endpoint:reports";r=1;t=20',
      "X-RateLimit-Limit": "5",
      "X-RateLimit-Remaining": "1",
      "X-RateLimit-Reset": "20",
    });
  });

  it("with several limits, a rejection reports the limit that rejected, not a roomier one", () => {
    const { store } = storeAt(T0);
    const checks = [
      enforce("tier:pro", PRO, "account"),
      enforce("tier:pro/endpoint:reports", REPORTS, "endpoint:reports"),
    ];
    for (let i = 0; i < 5; i++) store.decideSync({ subject: "c:acme", checks });
    const decision = store.decideSync({ subject: "c:acme", checks });
    const response = buildRateLimitResponse(decision, checks);
    expect(response.status).toBe(429);
    expect(response.headers.RateLimit).toBe(
      `"tier:pro/endpoint:reports";r=0;t=${response.headers["Retry-After"]}`,
    );
    expect(response.body?.scope).toBe("tier:pro/endpoint:reports");
  });

  it("violated-policies names every enforced limit that rejected, as RateLimit-Policy does", () => {
    const { store } = storeAt(T0);
    const tight: LimitSpec = { algorithm: "fixed-window", limit: 1, windowMs: 60_000 };
    const checks = [
      enforce("tier:pro", tight, "account"),
      dryRun("candidate:strict", tight),
      enforce("tier:pro/endpoint:reports", REPORTS, "endpoint:reports"),
      enforce("ceiling", tight),
    ];
    store.decideSync({ subject: "c:acme", checks });
    const response = buildRateLimitResponse(
      store.decideSync({ subject: "c:acme", checks }),
      checks,
    );
    const contract = checkRateLimitContract({
      status: response.status ?? 200,
      header: (name) =>
        Object.entries(response.headers).find(([key]) => key.toLowerCase() === name)?.[1],
      bodyText: JSON.stringify(response.body),
    });
    // The dry-run limit rejected too, but it is no quota the client is held to.
    expect(contract.problem?.["violated-policies"]).toEqual(["tier:pro", "ceiling"]);
    expect([...contract.policies.keys()]).toEqual([
      "tier:pro",
      "tier:pro/endpoint:reports",
      "ceiling",
    ]);
  });

  it("a dry-run limit is never listed and never reported, even when it would reject", () => {
    const { store } = storeAt(T0);
    const strict: LimitSpec = { algorithm: "token-bucket", capacity: 1, refillPerSec: 0.001 };
    const checks = [enforce("tier:pro", PRO, "account"), dryRun("candidate:strict", strict)];
    store.decideSync({ subject: "c:acme", checks });
    const decision = store.decideSync({ subject: "c:acme", checks });
    expect(decision.allowed).toBe(true);
    expect(decision.outcomes[1]?.allowed).toBe(false);
    expect(buildRateLimitResponse(decision, checks)).toEqual({
      status: null,
      headers: {
        "RateLimit-Policy": '"tier:pro";q=20;w=2',
        RateLimit: '"tier:pro";r=18;t=1',
        "X-RateLimit-Limit": "20",
        "X-RateLimit-Remaining": "18",
        "X-RateLimit-Reset": "1",
      },
      body: null,
      bodyText: null,
    });
  });

  it("with no enforced limit there are no headers at all", () => {
    const { store } = storeAt(T0);
    const none = store.decideSync({ subject: "c:acme", checks: [] });
    expect(buildRateLimitResponse(none, [])).toEqual({
      status: null,
      headers: {},
      body: null,
      bodyText: null,
    });
    const onlyDryRun = [dryRun("candidate:c1", PRO)];
    const decision = store.decideSync({ subject: "c:acme", checks: onlyDryRun });
    expect(buildRateLimitResponse(decision, onlyDryRun)).toEqual({
      status: null,
      headers: {},
      body: null,
      bodyText: null,
    });
  });

  it("a cost above the capacity gets no Retry-After, because no wait will ever help", () => {
    const { store } = storeAt(T0);
    const checks = [enforce("tier:pro", PRO, "account")];
    const decision = store.decideSync({ subject: "c:acme", checks, cost: 21 });
    expect(decision.reason).toBe("cost-exceeds-capacity");
    const response = buildRateLimitResponse(decision, checks);
    expect(response.status).toBe(429);
    expect(response.headers["Retry-After"]).toBeUndefined();
    expect(response.headers.RateLimit).toBe('"tier:pro";r=20;t=0');
    expect(response.body).toEqual({ ...QUOTA_BODY, retryAfterMs: 0 });
  });

  it("a degraded decision whose binding limit was not measured carries the policy only", () => {
    const decision: HttpDecision = {
      allowed: true,
      scope: null,
      retryAfterMs: 0,
      reason: null,
      outcomes: [
        {
          allowed: true,
          reason: null,
          scope: "tier:pro",
          mode: "enforce",
          limit: 20,
          remaining: 20,
          retryAfterMs: 0,
          resetAfterMs: 0,
        },
      ],
    };
    expect(buildRateLimitResponse(decision, [enforce("tier:pro", PRO)]).headers).toEqual({
      "RateLimit-Policy": '"tier:pro";q=20;w=2',
    });
  });

  const UNAVAILABLE_BODY = {
    type: "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity",
    title: "Rate limiter unavailable",
    status: 503,
    code: "LIMITER_UNAVAILABLE",
    scope: "address/endpoint:sign-in",
    retryAfterMs: 1000,
  };

  it("a fail-closed rejection (store unavailable) is a 503 with its Retry-After hint and the policy", () => {
    const decision: HttpDecision = {
      allowed: false,
      scope: "address/endpoint:sign-in",
      retryAfterMs: 1000,
      reason: "store-unavailable",
      outcomes: [
        {
          allowed: false,
          reason: "store-unavailable",
          scope: "address/endpoint:sign-in",
          mode: "enforce",
          limit: 5,
          remaining: 0,
          retryAfterMs: 1000,
          resetAfterMs: 1000,
        },
      ],
    };
    const checks = [
      enforce("address/endpoint:sign-in", {
        algorithm: "fixed-window",
        limit: 5,
        windowMs: 60_000,
      }),
    ];
    expect(buildRateLimitResponse(decision, checks)).toEqual({
      status: 503,
      headers: {
        "RateLimit-Policy": '"address/endpoint:sign-in";q=5;w=60',
        "Retry-After": "1",
        "Content-Type": "application/problem+json",
      },
      body: UNAVAILABLE_BODY,
      bodyText: JSON.stringify(UNAVAILABLE_BODY),
    });
  });

  it("accepts the core's LayeredDecision as it is", () => {
    const decision: LayeredDecision = {
      allowed: true,
      limit: 20,
      remaining: 3,
      retryAfterMs: 0,
      resetAfterMs: 1700,
      reason: null,
      scope: "tier:pro",
      outcomes: [
        {
          allowed: true,
          limit: 20,
          remaining: 3,
          retryAfterMs: 0,
          resetAfterMs: 1700,
          reason: null,
          scope: "tier:pro",
          mode: "enforce",
        },
      ],
    };
    expect(buildRateLimitResponse(decision, [enforce("tier:pro", PRO)]).headers.RateLimit).toBe(
      '"tier:pro";r=3;t=2',
    );
  });
});

function contractOf(response: ReturnType<typeof buildRateLimitResponse>) {
  return checkRateLimitContract({
    status: response.status ?? 200,
    header: (name) =>
      Object.entries(response.headers).find(([key]) => key.toLowerCase() === name)?.[1],
    bodyText: JSON.stringify(response.body),
  });
}

describe("every response parses and names only advertised policies (RFC 9651 parser)", () => {
  it("holds for random limits, costs and pauses", () => {
    const specs: LimitSpec[] = [
      PRO,
      CEILING,
      REPORTS,
      { algorithm: "leaky-meter", burst: 3, drainPerSec: 1 },
    ];
    fc.assert(
      fc.property(
        fc.subarray([0, 1, 2, 3], { minLength: 1 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 25 }), fc.integer({ min: 0, max: 3_000 })), {
          minLength: 1,
          maxLength: 30,
        }),
        (picked, steps) => {
          const { store, clock } = storeAt(T0);
          const checks = picked.map((index) =>
            index === 2
              ? dryRun(`s${index}`, specs[index] as LimitSpec)
              : enforce(`s${index}`, specs[index] as LimitSpec),
          );
          for (const [cost, pauseMs] of steps) {
            clock.advance(pauseMs);
            const response = buildRateLimitResponse(
              store.decideSync({ subject: "c:acme", checks, cost }),
              checks,
            );
            contractOf(response);
          }
        },
      ),
    );
  });

  it("the checker itself refuses a name RateLimit-Policy does not hold, and a wrong media type", () => {
    const { store } = storeAt(T0);
    const checks = [enforce("tier:pro", PRO)];
    store.decideSync({ subject: "c:acme", checks, cost: 20 });
    const rejected = buildRateLimitResponse(
      store.decideSync({ subject: "c:acme", checks }),
      checks,
    );
    expect(contractOf(rejected).problem?.["violated-policies"]).toEqual(["tier:pro"]);
    const renamed = { ...rejected, body: { ...rejected.body, "violated-policies": ["tier:free"] } };
    expect(() => contractOf(renamed as typeof rejected)).toThrow(
      /violated-policies names tier:free/,
    );
    const plainJson = {
      ...rejected,
      headers: { ...rejected.headers, "Content-Type": "application/json" },
    };
    expect(() => contractOf(plainJson)).toThrow(/application\/problem\+json/);
    const badField = { ...rejected, headers: { ...rejected.headers, RateLimit: "tier:pro;r=0" } };
    expect(() => contractOf(badField)).toThrow(/RateLimit/);
  });
});

describe("the body's text", () => {
  const printable = fc.string({
    unit: fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)),
    minLength: 1,
    maxLength: 12,
  });

  it("is JSON.stringify of the body, for any scopes (quotes and backslashes too), once cached as well", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(printable, { minLength: 1, maxLength: 3 }),
        fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
        fc.integer({ min: 0, max: 3 }),
        fc.oneof(fc.integer({ min: 0, max: 86_400_000 }), fc.constant(2 ** 53 - 1)),
        (scopes, rejects, bindingPick, retryAfterMs) => {
          const checks = scopes.map((scope) => enforce(scope, PRO));
          const outcomes = scopes.map((scope, i) => ({
            allowed: !(rejects[i] ?? false),
            reason: rejects[i] ? ("limit-exceeded" as const) : null,
            scope,
            mode: "enforce" as const,
            limit: 20,
            remaining: 0,
            retryAfterMs,
            resetAfterMs: retryAfterMs,
          }));
          const binding = scopes[bindingPick % scopes.length] as string;
          const decision: HttpDecision = {
            allowed: false,
            scope: binding,
            retryAfterMs,
            reason: "limit-exceeded",
            outcomes,
          };
          for (let pass = 0; pass < 2; pass++) {
            const response = buildRateLimitResponse(decision, checks);
            expect(response.bodyText).toBe(JSON.stringify(response.body));
          }
        },
      ),
    );
  });

  it("names every violated policy when the binding one was cached alone before", () => {
    const outcome = (scope: string, allowed: boolean) => ({
      allowed,
      reason: allowed ? null : ("limit-exceeded" as const),
      scope,
      mode: "enforce" as const,
      limit: 20,
      remaining: 0,
      retryAfterMs: 10,
      resetAfterMs: 10,
    });
    const checks = [enforce("a", PRO), enforce("b", PRO)];
    const rejectedBy = (isBRejecting: boolean) =>
      buildRateLimitResponse(
        {
          allowed: false,
          scope: "a",
          retryAfterMs: 10,
          reason: "limit-exceeded",
          outcomes: [outcome("a", false), outcome("b", !isBRejecting)],
        },
        checks,
      );
    const alone = rejectedBy(false);
    const both = rejectedBy(true);
    expect(JSON.parse(alone.bodyText ?? "")["violated-policies"]).toEqual(["a"]);
    expect(JSON.parse(both.bodyText ?? "")["violated-policies"]).toEqual(["a", "b"]);
  });

  it("is null for an admission, and JSON.stringify of the body for a fail-closed 503", () => {
    const { store } = storeAt(T0);
    const checks = [enforce("tier:pro", PRO)];
    const admitted = buildRateLimitResponse(store.decideSync({ subject: "c:x", checks }), checks);
    expect(admitted.bodyText).toBeNull();
    const unavailable = buildRateLimitResponse(
      {
        allowed: false,
        scope: "tier:pro",
        retryAfterMs: 1_000,
        reason: "store-unavailable",
        outcomes: [],
      },
      checks,
    );
    expect(unavailable.bodyText).toBe(JSON.stringify(unavailable.body));
  });
});

describe("Retry-After is whole seconds rounded up", () => {
  it.each([
    [0, 0],
    [1, 1],
    [50, 1],
    [999, 1],
    [1000, 1],
    [1001, 2],
    [59_999, 60],
  ])("%d ms is %d s", (ms, seconds) => {
    expect(retryAfterSeconds(ms)).toBe(seconds);
  });

  it("never tells a client to come back before it can be served, and never a second late", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10_000_000 }), (retryAfterMs) => {
        const seconds = retryAfterSeconds(retryAfterMs);
        expect(seconds * 1000).toBeGreaterThanOrEqual(retryAfterMs);
        expect(seconds * 1000 - retryAfterMs).toBeLessThan(1000);
      }),
    );
  });
});

describe("Structured Field serialization (RFC 9651)", () => {
  it.each([
    ["tier:pro", '"tier:pro"'],
    ["customer:C-1/endpoint:reports", '"customer:C-1/endpoint:reports"'],
    ['say "hi"', '"say \\"hi\\""'],
    ["back\\slash", '"back\\\\slash"'],
    ["", '""'],
  ])("the string %j serializes as %s", (value, serialized) => {
    expect(serializeSfString(value)).toBe(serialized);
  });

  it.each(["tab\there", "line\nbreak", "caf\u00e9", "\u007f"])(
    "refuses %j: sf-strings are printable ASCII only",
    (value) => {
      expect(() => serializeSfString(value)).toThrow(RangeError);
    },
  );

  it("round-trips every printable ASCII string through the escape rules", () => {
    fc.assert(
      fc.property(
        fc.string({
          unit: fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)),
        }),
        (value) => {
          const serialized = serializeSfString(value);
          expect(serialized.startsWith('"') && serialized.endsWith('"')).toBe(true);
          const unescaped = serialized.slice(1, -1).replace(/\\(["\\])/g, "$1");
          expect(unescaped).toBe(value);
          // No unescaped quote inside.
          expect(/(^|[^\\])"/.test(serialized.slice(1, -1).replace(/\\\\/g, ""))).toBe(false);
        },
      ),
    );
  });

  it("refuses integers that are fractional or beyond 15 digits", () => {
    expect(serializeSfInteger(999_999_999_999_999)).toBe("999999999999999");
    expect(() => serializeSfInteger(1_000_000_000_000_000)).toThrow(RangeError);
    expect(() => serializeSfInteger(1.5)).toThrow(RangeError);
    expect(() => serializeSfInteger(Number.NaN)).toThrow(RangeError);
  });
});
