/**
 * GET /api/v1/rejected-customers through its real route handler: the enforcers' per-minute tally
 * in the real Redis (written with the tally's own key and member names) ranked and joined with the
 * registry, hostile parameters (400 naming the field, never a 500), and 401.
 */
import { randomBytes } from "node:crypto";
import { rejectionTallyKey } from "@limitplane/enforcer/publication";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { installDeps } from "@/lib/server/composition";
import { provideApiHarness } from "./helpers/api-harness";

const api = provideApiHarness();
const prefix = `${inject("redisKeyPrefix")}rejectedapi-${randomBytes(4).toString("hex")}:`;
/** 30 s into a minute: the span's last minute has had half its time. */
const NOW_MS = Date.parse("2026-12-05T08:00:30.000Z");
const NOW_MINUTE = Math.floor(NOW_MS / 60_000);
let redis: Redis;

beforeAll(async () => {
  redis = new Redis(inject("redisUrl"));
  installDeps({ seen: { redis, prefix, clock: { nowMs: () => NOW_MS } } });
  const tally = async (minutesAgo: number, ...pairs: [string, number][]) => {
    const key = rejectionTallyKey(prefix, NOW_MINUTE - minutesAgo);
    for (const [member, count] of pairs) await redis.zincrby(key, count, member);
    await redis.pexpire(key, 600_000);
  };
  // initech is in the registry (the harness imports the example policy); vandelay is not.
  await tally(0, ["vandelay|tier:free", 40], ["initech|customer:initech", 5]);
  // Requests without a customer, per limit: ranked apart, never as a customer.
  await tally(0, ["~anonymous|anonymous:default", 70], ["~anonymous|ceiling", 3]);
  await tally(2, ["vandelay|tier:free", 20], ["vandelay|ceiling", 30], ["initech|tier:free", 7]);
  // Older than 15 minutes: only in the hour.
  await tally(30, ["hooli|tier:pro", 500]);
  // Not written by an enforcer: skipped.
  await tally(1, ["<script>|tier:free", 9_999], ["no-separator", 9_999]);
});

afterAll(() => {
  redis.disconnect();
});

describe("GET /api/v1/rejected-customers", () => {
  it("200: the most rejected first, with the binding limit, rate and sparkline", async () => {
    const response = await api.call("GET", "/api/v1/rejected-customers?minutes=15", {
      as: { token: api.as("viewer").token },
    });
    expect(response.status, response.text).toBe(200);
    expect(response.body).toMatchObject({
      minutes: 15,
      sparklineMinutes: 1,
      totalRejected: 102,
      rejectedCustomerCount: 2,
      to: new Date(NOW_MS).toISOString(),
    });
    const [first, second] = response.body.customers;
    expect(first).toMatchObject({
      customerId: "vandelay",
      displayName: null,
      tier: null,
      rejected: 90,
      bindingScope: "tier:free",
      scopes: [
        { scope: "tier:free", rejected: 60 },
        { scope: "ceiling", rejected: 30 },
      ],
    });
    // 90 over 14.5 minutes.
    expect(first.rejectedPerMinute).toBeCloseTo(90 / 14.5, 6);
    expect(first.sparkline).toHaveLength(15);
    expect(first.sparkline.slice(-3)).toEqual([50, 0, 40]);
    expect(second).toMatchObject({ customerId: "initech", rejected: 12, tier: expect.any(String) });
    expect(second.displayName).not.toBeNull();
    expect(response.body.anonymousRejected).toBe(73);
    expect(response.body.anonymous).toMatchObject([
      { scope: "anonymous:default", rejected: 70 },
      { scope: "ceiling", rejected: 3 },
    ]);
  });

  it("200: the default hour reaches older minutes; limit cuts the list, not the totals", async () => {
    const response = await api.call("GET", "/api/v1/rejected-customers?limit=1", {
      as: { token: api.as("viewer").token },
    });
    expect(response.status, response.text).toBe(200);
    expect(response.body.customers.map((c: { customerId: string }) => c.customerId)).toEqual([
      "hooli",
    ]);
    expect(response.body.totalRejected).toBe(602);
    expect(response.body.rejectedCustomerCount).toBe(3);
  });

  it.each([
    ["minutes 0", "minutes=0", "minutes"],
    ["minutes beyond what the gateways keep", "minutes=361", "minutes"],
    ["fractional minutes", "minutes=1.5", "minutes"],
    ["minutes as words", "minutes=ten", "minutes"],
    ["limit 201", "limit=201", "limit"],
    ["an unknown parameter", "customer=acme", ""],
  ])("400 for %s", async (_label, query, field) => {
    const response = await api.call("GET", `/api/v1/rejected-customers?${query}`, {
      as: { token: api.as("viewer").token },
    });
    expect(response.status, response.text).toBe(400);
    expect(response.body.error.code).toBe("VALIDATION_FAILED");
    if (field !== "") {
      expect(response.body.error.fieldErrors.map((e: { path: string }) => e.path)).toContain(
        `query.${field}`,
      );
    }
  });

  it("401 without a credential", async () => {
    expect((await api.call("GET", "/api/v1/rejected-customers")).status).toBe(401);
  });
});
