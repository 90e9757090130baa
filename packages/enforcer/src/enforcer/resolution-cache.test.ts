import { describe, expect, it } from "vitest";
import { prepareSnapshot } from "../policy/prepare";
import { resolveLimits } from "../policy/resolve";
import { exampleSnapshot, tokenBucket } from "../testing/policy-factory";
import { type CachedResolveRequest, ResolutionCache } from "./resolution-cache";

/** During the example's acme incident (2025-06-02 09:00 to 21:00 UTC, factor 3). */
const DURING_INCIDENT_MS = Date.parse("2025-06-02T12:00:00Z");
const AFTER_INCIDENT_MS = Date.parse("2025-06-03T12:00:00Z");

function request(overrides: Partial<CachedResolveRequest> = {}): CachedResolveRequest {
  return {
    customerId: "initech",
    tier: "free",
    method: "GET",
    path: "/v1/things",
    clientAddress: "203.0.113.9",
    endpointClass: null,
    ...overrides,
  };
}

const noTrace = { trace: false } as const;

describe("ResolutionCache", () => {
  it("answers a repeated customer, tier and route from the cache, with resolveLimits' result", () => {
    const snapshot = prepareSnapshot(exampleSnapshot());
    const cache = new ResolutionCache();
    const first = cache.resolve(snapshot, request(), AFTER_INCIDENT_MS);
    const second = cache.resolve(snapshot, request(), AFTER_INCIDENT_MS);
    expect(second).toBe(first);
    expect(cache.hitCount).toBe(1);
    expect(first).toEqual(resolveLimits(snapshot, request(), AFTER_INCIDENT_MS, noTrace));
  });

  it.each([
    ["another customer", { customerId: "initech-2" }],
    ["another tier", { tier: "pro" }],
    ["no tier", { tier: null }],
    ["another path", { path: "/v1/reports/monthly" }],
    ["another method", { method: "POST" }],
    ["an endpoint class named by the gateway", { endpointClass: "reports" }],
  ])("keys %s apart", (_label, change: Partial<CachedResolveRequest>) => {
    const snapshot = prepareSnapshot(exampleSnapshot());
    const cache = new ResolutionCache();
    cache.resolve(snapshot, request(), AFTER_INCIDENT_MS);
    const changed = request(change);
    const resolution = cache.resolve(snapshot, changed, AFTER_INCIDENT_MS);
    expect(cache.hitCount).toBe(0);
    expect(resolution).toEqual(resolveLimits(snapshot, changed, AFTER_INCIDENT_MS, noTrace));
  });

  it("never serves a resolution made under another snapshot (a new version's limits apply at once)", () => {
    const cache = new ResolutionCache();
    const v1 = prepareSnapshot(exampleSnapshot(() => {}, { version: 1 }));
    const v2 = prepareSnapshot(
      exampleSnapshot(
        (policy) => {
          const free = policy.tiers.find((tier) => tier.name === "free");
          if (free === undefined) throw new Error("the example policy has a free tier");
          free.limit = tokenBucket(40, 4);
        },
        { version: 2 },
      ),
    );
    const before = cache.resolve(v1, request(), AFTER_INCIDENT_MS);
    const after = cache.resolve(v2, request(), AFTER_INCIDENT_MS);
    expect(cache.hitCount).toBe(0);
    expect(after).toEqual(resolveLimits(v2, request(), AFTER_INCIDENT_MS, noTrace));
    expect(after.checks).not.toEqual(before.checks);
    expect(cache.size).toBe(1);
  });

  it("does not cache a customer with overrides: an incident's start and end apply per request", () => {
    const snapshot = prepareSnapshot(exampleSnapshot());
    const cache = new ResolutionCache();
    const acme = request({ customerId: "acme", tier: "enterprise" });
    const during = cache.resolve(snapshot, acme, DURING_INCIDENT_MS);
    const after = cache.resolve(snapshot, acme, AFTER_INCIDENT_MS);
    expect(cache.hitCount).toBe(0);
    expect(cache.size).toBe(0);
    expect(during).toEqual(resolveLimits(snapshot, acme, DURING_INCIDENT_MS, noTrace));
    expect(after).toEqual(resolveLimits(snapshot, acme, AFTER_INCIDENT_MS, noTrace));
    expect(during.checks).not.toEqual(after.checks);
  });

  it("does not cache anonymous requests (keyed by their address)", () => {
    const snapshot = prepareSnapshot(exampleSnapshot());
    const cache = new ResolutionCache();
    const first = cache.resolve(snapshot, request({ customerId: null, tier: null }), 0);
    const second = cache.resolve(
      snapshot,
      request({ customerId: null, tier: null, clientAddress: "198.51.100.7" }),
      0,
    );
    expect(cache.size).toBe(0);
    expect(first.subject).not.toBe(second.subject);
  });

  it("holds at most maxEntries resolutions under a flood of unique customers", () => {
    const snapshot = prepareSnapshot(exampleSnapshot());
    const cache = new ResolutionCache({ maxEntries: 50 });
    for (let i = 0; i < 1_000; i++) {
      cache.resolve(snapshot, request({ customerId: `flood-${i}` }), AFTER_INCIDENT_MS);
      expect(cache.size).toBeLessThanOrEqual(50);
    }
    expect(cache.size).toBe(50);
    // The most recent is still served from the cache, the first long gone.
    cache.resolve(snapshot, request({ customerId: "flood-999" }), AFTER_INCIDENT_MS);
    expect(cache.hitCount).toBe(1);
    cache.resolve(snapshot, request({ customerId: "flood-0" }), AFTER_INCIDENT_MS);
    expect(cache.hitCount).toBe(1);
  });

  it("holds at most maxEntries resolutions when customers add routes one by one", () => {
    const snapshot = prepareSnapshot(exampleSnapshot());
    const cache = new ResolutionCache({ maxEntries: 20 });
    for (let i = 0; i < 400; i++) {
      cache.resolve(
        snapshot,
        request({ customerId: `routes-${i % 7}`, path: `/v1/things/${i % 13}` }),
        AFTER_INCIDENT_MS,
      );
      expect(cache.size).toBeLessThanOrEqual(20);
    }
    // A route just resolved is served from the cache.
    const hits = cache.hitCount;
    cache.resolve(snapshot, request({ customerId: "routes-0", path: "/v1/fresh" }), 0);
    cache.resolve(snapshot, request({ customerId: "routes-0", path: "/v1/fresh" }), 0);
    expect(cache.hitCount).toBe(hits + 1);
  });

  it("cached() answers what resolve() kept, under the snapshot it was kept under, and nothing else", () => {
    const snapshot = prepareSnapshot(exampleSnapshot());
    const cache = new ResolutionCache();
    expect(cache.cached(snapshot, request())).toBeUndefined();
    const kept = cache.resolve(snapshot, request(), AFTER_INCIDENT_MS);
    expect(cache.cached(snapshot, request())).toBe(kept);
    expect(cache.cached(snapshot, request({ path: "/v1/other" }))).toBeUndefined();
    expect(cache.cached(snapshot, request({ customerId: null }))).toBeUndefined();
    // Another snapshot object empties the cache, even one with the same content.
    const again = prepareSnapshot(exampleSnapshot());
    expect(cache.cached(again, request())).toBeUndefined();
    expect(cache.cached(snapshot, request())).toBeUndefined();
  });

  it("resolveAndKeep() keeps what it resolves under its own snapshot, never an older one's", () => {
    const v1 = prepareSnapshot(exampleSnapshot());
    const v2 = prepareSnapshot(exampleSnapshot());
    const cache = new ResolutionCache();
    cache.resolve(v1, request(), AFTER_INCIDENT_MS);
    const other = request({ path: "/v1/other" });
    const kept = cache.resolveAndKeep(v2, other, AFTER_INCIDENT_MS);
    expect(kept).toEqual(resolveLimits(v2, other, AFTER_INCIDENT_MS, noTrace));
    expect(cache.cached(v2, other)).toBe(kept);
    // v1's entry went with v1, and v2's entry is not served under v1.
    expect(cache.cached(v2, request())).toBeUndefined();
    expect(cache.cached(v1, other)).toBeUndefined();
  });

  it("throws for an invalid customer id, as resolveLimits does, and caches nothing", () => {
    const snapshot = prepareSnapshot(exampleSnapshot());
    const cache = new ResolutionCache();
    expect(() =>
      cache.resolve(snapshot, request({ customerId: "bad id" }), AFTER_INCIDENT_MS),
    ).toThrow(TypeError);
    expect(cache.size).toBe(0);
  });

  it.each([0, -1, 1.5, Number.NaN])("refuses maxEntries %s, naming the option", (maxEntries) => {
    expect(() => new ResolutionCache({ maxEntries })).toThrow(
      /resolutionCache\.maxEntries must be a whole number >= 1/,
    );
  });
});
