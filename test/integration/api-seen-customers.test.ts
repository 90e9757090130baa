/**
 * The seen-customer API through its real route handlers: what gateways reported (written here by a
 * real enforcer), hostile ids, searches and parameters (400, never a 500), 401 and 404, and an
 * incident raised through the API for a customer only the gateways know, which registers it.
 */
import { randomBytes } from "node:crypto";
import { createEnforcer } from "@limitplane/enforcer";
import { MemoryStore } from "@limitplane/enforcer/limiter";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { installDeps, systemClock } from "@/lib/server/composition";
import { provideApiHarness } from "./helpers/api-harness";

const api = provideApiHarness();
const redisUrl = inject("redisUrl");
const prefix = `${inject("redisKeyPrefix")}seenapi-${randomBytes(4).toString("hex")}:`;
let redis: Redis;

beforeAll(async () => {
  redis = new Redis(redisUrl);
  installDeps({ seen: { redis, prefix, clock: systemClock } });
  const enforcer = await createEnforcer({
    expectedGateways: 1,
    redis: { url: redisUrl, keyPrefix: prefix },
    store: () => new MemoryStore(),
    controlPlane: { startupWaitMs: 50 },
    logger: { log: () => undefined },
  });
  for (const [customerId, tier] of [
    ["hooli", "pro"],
    ["vandelay", "free"],
    ["initech", "free"], // registered: the registry's search lists it
  ] as const) {
    await enforcer.check({ customerId, tier, method: "GET", path: "/v1/things" });
  }
  await enforcer.stop();
});

afterAll(() => {
  redis.disconnect();
});

describe("GET /api/v1/seen-customers", () => {
  it("200: the customers gateways report that the registry lacks, with the reported tier", async () => {
    const response = await api.call("GET", "/api/v1/seen-customers", {
      as: { token: api.as("viewer").token },
    });
    expect(response.status, response.text).toBe(200);
    const ids = response.body.customers.map((customer: { id: string }) => customer.id).sort();
    expect(ids).toEqual(["hooli", "vandelay"]);
    expect(
      response.body.customers.find((customer: { id: string }) => customer.id === "hooli"),
    ).toMatchObject({ reportedTier: "pro", reportedTiers: [{ tier: "pro" }] });
    expect(response.body.unreported).toEqual({ total: 0, enforcers: 0 });
  });

  it("200: search matches the start of the id", async () => {
    const response = await api.call("GET", "/api/v1/seen-customers?search=van", {
      as: { token: api.as("viewer").token },
    });
    expect(response.status).toBe(200);
    expect(response.body.customers.map((c: { id: string }) => c.id)).toEqual(["vandelay"]);
  });

  it.each([
    ["a control character in search", "search=a%00b", "search"],
    ["a bidirectional override in search", "search=%E2%80%AEx", "search"],
    ["a 201-character search", `search=${"a".repeat(201)}`, "search"],
    ["limit 0", "limit=0", "limit"],
    ["a fractional limit", "limit=1.5", "limit"],
    ["an unknown parameter", "tier=pro", ""],
  ])("400 for %s", async (_label, query, field) => {
    const response = await api.call("GET", `/api/v1/seen-customers?${query}`, {
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
    expect((await api.call("GET", "/api/v1/seen-customers")).status).toBe(401);
  });
});

describe("GET /api/v1/seen-customers/{id}", () => {
  it("200: one customer's report", async () => {
    const response = await api.call("GET", "/api/v1/seen-customers/hooli", {
      as: { token: api.as("viewer").token },
    });
    expect(response.status, response.text).toBe(200);
    expect(response.body.customer).toMatchObject({ id: "hooli", reportedTier: "pro" });
  });

  it("404 for a customer no gateway reported", async () => {
    const response = await api.call("GET", "/api/v1/seen-customers/nobody", {
      as: { token: api.as("viewer").token },
    });
    expect(response.status).toBe(404);
    expect(response.body.error.message).toContain('No gateway reported customer "nobody"');
  });

  it.each([
    ["a space", "a%20b"],
    ["a brace", "%7Bslot%7D"],
    ["a script", "%3Cscript%3E"],
    ["129 characters", `a${"b".repeat(128)}`],
  ])("400 for an id with %s", async (_label, id) => {
    const response = await api.call("GET", `/api/v1/seen-customers/${id}`, {
      as: { token: api.as("viewer").token },
    });
    expect(response.status, response.text).toBe(400);
    expect(response.body.error.code).toBe("VALIDATION_FAILED");
  });
});

describe("POST /api/v1/incidents for a customer only the gateways know", () => {
  it("201: registers the customer with the reported tier, audited as its own entry", async () => {
    const before = await api.fingerprint();
    const response = await api.call("POST", "/api/v1/incidents", {
      as: { token: api.as("operator").token },
      body: { customerId: "hooli", factor: 3, durationMs: 900_000, reason: "hooli backfill" },
    });
    expect(response.status, response.text).toBe(201);
    const after = await api.fingerprint();
    expect(after.audit).toBe((before.audit ?? 0) + 2);
    expect(
      await api.db().customer.findUnique({ where: { id: "hooli" }, select: { tier: true } }),
    ).toEqual({ tier: "pro" });
    const audit = await api.call("GET", "/api/v1/audit?customerId=hooli", {
      as: { token: api.as("viewer").token },
    });
    expect(audit.status, audit.text).toBe(200);
    expect(audit.body.entries.map((entry: { action: string }) => entry.action)).toEqual([
      "incident.raise",
      "customer.create",
    ]);
    // Registered now: no longer listed as seen only.
    const seen = await api.call("GET", "/api/v1/seen-customers", {
      as: { token: api.as("viewer").token },
    });
    expect(seen.body.customers.map((c: { id: string }) => c.id)).toEqual(["vandelay"]);
  });
});
