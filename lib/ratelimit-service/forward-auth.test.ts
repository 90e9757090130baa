import { describe, expect, it } from "vitest";
import { DEFAULT_FORWARD_AUTH_OPTIONS, forwardAuthRequestOf } from "./forward-auth";
import { currentLimitOf } from "./rls-response";

describe("forwardAuthRequestOf reads each gateway's headers", () => {
  it.each([
    [
      "Traefik and Caddy: X-Forwarded-*, the right-most X-Forwarded-For entry",
      {
        "x-forwarded-method": "post",
        "x-forwarded-uri": "/v1/reports?x=1",
        "x-forwarded-for": "203.0.113.9, 198.51.100.7",
        "x-customer-id": "acme",
        "x-tier": "pro",
      },
      {
        customerId: "acme",
        tier: "pro",
        method: "POST",
        path: "/v1/reports?x=1",
        clientAddress: "198.51.100.7",
      },
    ],
    [
      "nginx: X-Original-*, X-Real-IP, the 403 flag, a cost",
      {
        "x-original-method": "GET",
        "x-original-uri": "/v1/things",
        "x-real-ip": "192.0.2.1",
        "x-limitplane-deny-status": "403",
        "x-limitplane-cost": "2.5",
      },
      {
        customerId: null,
        tier: null,
        method: "GET",
        path: "/v1/things",
        clientAddress: "192.0.2.1",
        cost: 2.5,
      },
    ],
  ])("%s", (_name, headers, request) => {
    const parsed = forwardAuthRequestOf(headers, "127.0.0.1", DEFAULT_FORWARD_AUTH_OPTIONS);
    expect(parsed).toEqual({
      ok: true,
      request,
      denyStatus: "x-limitplane-deny-status" in headers ? 403 : 429,
    });
  });

  const base = { "x-forwarded-method": "GET", "x-forwarded-uri": "/" };
  it.each([
    [{}, "x-forwarded-method"],
    [{ "x-forwarded-method": "GET" }, "x-forwarded-uri"],
    [{ ...base, "x-forwarded-uri": "no-slash" }, "x-forwarded-uri"],
    [{ ...base, "x-forwarded-for": "evil" }, "x-forwarded-for"],
    [{ ...base, "x-customer-id": "a b" }, "x-customer-id"],
    [{ ...base, "x-limitplane-cost": "-1" }, "x-limitplane-cost"],
    [{ ...base, "x-limitplane-cost": "1e9" }, "x-limitplane-cost"],
    [{ ...base, "x-limitplane-deny-status": "500" }, "x-limitplane-deny-status"],
  ])("refuses %j naming %s", (headers, field) => {
    const parsed = forwardAuthRequestOf(headers, "127.0.0.1", DEFAULT_FORWARD_AUTH_OPTIONS);
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && parsed.field).toBe(field);
  });
});

describe("currentLimitOf says a limit in RLS units, never more than exists", () => {
  it.each([
    [{ algorithm: "fixed-window", limit: 100, windowMs: 60_000 }, 100, "MINUTE"],
    [{ algorithm: "sliding-window", limit: 5, windowMs: 1_000 }, 5, "SECOND"],
    [{ algorithm: "sliding-log", limit: 90, windowMs: 90_000 }, 1, "SECOND"],
    [{ algorithm: "fixed-window", limit: 10, windowMs: 7_200_000 }, 5, "HOUR"],
    [{ algorithm: "token-bucket", capacity: 20, refillPerSec: 10 }, 10, "SECOND"],
    [{ algorithm: "token-bucket", capacity: 20, refillPerSec: 0.5 }, 30, "MINUTE"],
    [{ algorithm: "leaky-meter", burst: 5, drainPerSec: 0.001 }, 3, "HOUR"],
    [{ algorithm: "fixed-window", limit: 1, windowMs: 172_800_000 }, 3, "WEEK"],
    [{ algorithm: "fixed-window", limit: 700, windowMs: 604_800_000 }, 700, "WEEK"],
    [{ algorithm: "sliding-window", limit: 9, windowMs: 2_592_000_000 }, 9, "MONTH"],
    [{ algorithm: "fixed-window", limit: 3, windowMs: 31_536_000_000 }, 3, "YEAR"],
    [{ algorithm: "fixed-window", limit: 9, windowMs: 7_776_000_000 }, 3, "MONTH"],
    [{ algorithm: "token-bucket", capacity: 1, refillPerSec: 1e-9 }, 0, "YEAR"],
  ] as const)("%j is %d per %s", (spec, requests, unit) => {
    expect(currentLimitOf(spec)).toEqual({ requests_per_unit: requests, unit });
  });
});
