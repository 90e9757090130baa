/**
 * Tiers, endpoint classes, settings, customers and customer overrides through the API: for every
 * route success, bad input, not found and conflict where they apply. A refused change writes
 * nothing (every table's rows and versions, the audit log included); a change writes exactly one
 * audit entry naming the caller, the reason and the request id.
 */
import { describe, expect, it } from "vitest";
import { type ApiResponse, type CallOptions, provideApiHarness } from "./helpers/api-harness";
import { uniqueName } from "./helpers/policy-fixtures";

const api = provideApiHarness();
const admin = () => ({ token: api.as("admin").token });
const operator = () => ({ token: api.as("operator").token });
const bucket = (capacity: number) => ({
  algorithm: "token-bucket" as const,
  capacity,
  refillPerSec: capacity / 10,
});

/** Calls a change that must be refused with `status` and `code`, and asserts it wrote nothing. */
async function refused(
  method: string,
  path: string,
  options: CallOptions,
  status: number,
  code: string,
): Promise<ApiResponse> {
  const before = await api.fingerprint();
  const response = await api.call(method, path, options);
  expect(response.status, response.text).toBe(status);
  expect(response.body.error.code).toBe(code);
  expect(response.body.error.message.length).toBeGreaterThan(10);
  expect(response.body.error.requestId).toBe(response.headers.get("x-request-id"));
  expect(await api.fingerprint()).toEqual(before);
  return response;
}

/** Calls a change that must succeed, and returns it with its one audit entry. */
async function changed(method: string, path: string, options: CallOptions, status = 200) {
  const before = await api.fingerprint();
  const response = await api.call(method, path, {
    ...options,
    headers: { "x-request-id": "req-api-test-0001", ...options.headers },
  });
  expect(response.status, response.text).toBe(status);
  const after = await api.fingerprint();
  expect(after.audit).toBe((before.audit ?? 0) + 1);
  const entry = await api.db().auditEntry.findFirstOrThrow({
    where: { id: BigInt(response.body.auditEntryId) },
  });
  // The server's id, never the one the client sent (which is echoed apart).
  expect(entry.requestId).toBe(response.headers.get("x-request-id"));
  expect(entry.requestId).not.toBe("req-api-test-0001");
  expect(response.headers.get("x-client-request-id")).toBe("req-api-test-0001");
  return { response, entry };
}

describe("tiers", () => {
  it("GET list 200 and one 200; 404 unknown; 400 malformed name", async () => {
    const list = await api.call("GET", "/api/v1/tiers", { as: { token: api.as("viewer").token } });
    expect(list.status).toBe(200);
    expect(list.body.tiers.map((tier: { name: string }) => tier.name)).toEqual([
      "enterprise",
      "free",
      "pro",
    ]);
    const one = await api.call("GET", "/api/v1/tiers/pro", { as: admin() });
    expect(one.body.tier).toMatchObject({ name: "pro", version: 1 });
    await refused("GET", "/api/v1/tiers/platinum", { as: admin() }, 404, "NOT_FOUND");
    await refused("GET", "/api/v1/tiers/Not%20A%20Name", { as: admin() }, 400, "VALIDATION_FAILED");
  });

  it("POST 201 audited as the token with its reason; 400 bad limit; 409 existing", async () => {
    const name = uniqueName("gold");
    const { response, entry } = await changed(
      "POST",
      "/api/v1/tiers",
      { as: admin(), body: { name, limit: bucket(500), reason: "new plan for Q3" } },
      201,
    );
    expect(response.body).toMatchObject({
      tier: { name, version: 1, limit: { capacity: 500, mode: "enforce" } },
      policyVersion: expect.any(Number),
      published: false,
    });
    expect(entry).toMatchObject({
      action: "tier.create",
      actorType: "token",
      actorId: api.as("admin").tokenId,
      actorName: "admin token",
      reason: "new plan for Q3",
    });
    const bad = await refused(
      "POST",
      "/api/v1/tiers",
      { as: admin(), body: { name: "x", limit: { ...bucket(500), capacity: 1.5 }, reason: "r" } },
      400,
      "VALIDATION_FAILED",
    );
    expect(bad.body.error.fieldErrors).toEqual([
      { path: "limit.capacity", message: "capacity must be a whole number, not 1.5" },
    ]);
    await refused(
      "POST",
      "/api/v1/tiers",
      { as: admin(), body: { name, limit: bucket(500), reason: "again" } },
      409,
      "CONFLICT",
    );
  });

  it("PATCH 200 then 409 VERSION_CONFLICT with the current tier; 404; 400 without a reason", async () => {
    const name = uniqueName("silver");
    await changed(
      "POST",
      "/api/v1/tiers",
      {
        as: admin(),
        body: { name, limit: bucket(100), reason: "r" },
      },
      201,
    );
    const { response } = await changed("PATCH", `/api/v1/tiers/${name}`, {
      as: { session: api.as("admin").session },
      body: { expectedVersion: 1, limit: bucket(200), reason: "more headroom" },
    });
    expect(response.body.tier).toMatchObject({ version: 2, limit: { capacity: 200 } });
    const stale = await refused(
      "PATCH",
      `/api/v1/tiers/${name}`,
      { as: admin(), body: { expectedVersion: 1, limit: bucket(300), reason: "stale" } },
      409,
      "VERSION_CONFLICT",
    );
    expect(stale.body.error.details).toMatchObject({
      currentVersion: 2,
      current: { name, limit: { capacity: 200 } },
      changedBy: [{ action: "tier.update", actorName: "Admin Person", reason: "more headroom" }],
    });
    await refused(
      "PATCH",
      "/api/v1/tiers/nope",
      { as: admin(), body: { expectedVersion: 1, limit: bucket(300), reason: "r" } },
      404,
      "NOT_FOUND",
    );
    const noReason = await refused(
      "PATCH",
      `/api/v1/tiers/${name}`,
      { as: admin(), body: { expectedVersion: 2, limit: bucket(300) } },
      400,
      "VALIDATION_FAILED",
    );
    expect(noReason.body.error.fieldErrors).toEqual([
      { path: "reason", message: "reason is required" },
    ]);
  });

  it("DELETE 200; 409 while customers use it; 404 unknown", async () => {
    const name = uniqueName("bronze");
    await changed(
      "POST",
      "/api/v1/tiers",
      { as: admin(), body: { name, limit: bucket(100), reason: "r" } },
      201,
    );
    const inUse = await refused(
      "DELETE",
      "/api/v1/tiers/pro",
      { as: admin(), body: { expectedVersion: 1, reason: "retire" } },
      409,
      "CONFLICT",
    );
    expect(inUse.body.error.message).toMatch(/still used by/);
    const { entry } = await changed("DELETE", `/api/v1/tiers/${name}`, {
      as: admin(),
      body: { expectedVersion: 1, reason: "unused" },
    });
    expect(entry).toMatchObject({ action: "tier.delete", entityId: name });
    await refused(
      "DELETE",
      `/api/v1/tiers/${name}`,
      { as: admin(), body: { expectedVersion: 1, reason: "again" } },
      404,
      "NOT_FOUND",
    );
  });
});

describe("endpoint classes", () => {
  it("GET list and one; POST 201; PATCH 200 and 409 stale; DELETE 409 in use, 200 unused; 404", async () => {
    const list = await api.call("GET", "/api/v1/endpoint-classes", { as: admin() });
    expect(list.body.endpointClasses.map((c: { name: string }) => c.name)).toEqual([
      "default",
      "reports",
      "search",
      "sign-in",
    ]);
    await refused("GET", "/api/v1/endpoint-classes/exports", { as: admin() }, 404, "NOT_FOUND");
    const name = uniqueName("exports");
    const { response } = await changed(
      "POST",
      "/api/v1/endpoint-classes",
      {
        as: admin(),
        body: {
          name,
          match: [{ method: "GET", path: `/v1/${name}/**` }],
          cost: 5,
          limits: { pro: bucket(100) },
          reason: "new export endpoints",
        },
      },
      201,
    );
    expect(response.body.endpointClass).toMatchObject({ name, cost: 5, keyBy: "address" });
    const badMatch = await refused(
      "POST",
      "/api/v1/endpoint-classes",
      {
        as: admin(),
        body: { name: uniqueName("x"), match: [{ method: "get", path: "no-slash" }], reason: "r" },
      },
      400,
      "VALIDATION_FAILED",
    );
    expect(badMatch.body.error.fieldErrors.map((e: { path: string }) => e.path)).toEqual([
      "match[0].method",
      "match[0].path",
    ]);
    await changed("PATCH", `/api/v1/endpoint-classes/${name}`, {
      as: admin(),
      body: { expectedVersion: 1, cost: 4, reason: "cheaper" },
    });
    await refused(
      "PATCH",
      `/api/v1/endpoint-classes/${name}`,
      { as: admin(), body: { expectedVersion: 1, cost: 3, reason: "stale" } },
      409,
      "VERSION_CONFLICT",
    );
    await refused(
      "DELETE",
      "/api/v1/endpoint-classes/reports",
      { as: admin(), body: { expectedVersion: 1, reason: "r" } },
      409,
      "CONFLICT",
    );
    await changed("DELETE", `/api/v1/endpoint-classes/${name}`, {
      as: admin(),
      body: { expectedVersion: 2, reason: "not needed" },
    });
    await refused(
      "DELETE",
      `/api/v1/endpoint-classes/${name}`,
      { as: admin(), body: { expectedVersion: 2, reason: "r" } },
      404,
      "NOT_FOUND",
    );
  });
});

describe("settings", () => {
  it("GET 200; PATCH 200 changes a ceiling; 400 unknown tier; 409 stale", async () => {
    const current = await api.call("GET", "/api/v1/settings", { as: operator() });
    expect(current.status).toBe(200);
    const version = current.body.settings.version;
    const { response } = await changed("PATCH", "/api/v1/settings", {
      as: admin(),
      body: {
        expectedVersion: version,
        guardrails: { maxIncidentFactor: 20 },
        reason: "allow bigger raises during launches",
      },
    });
    expect(response.body.settings.guardrails).toMatchObject({ maxIncidentFactor: 20 });
    const unknownTier = await refused(
      "PATCH",
      "/api/v1/settings",
      { as: admin(), body: { expectedVersion: version + 1, defaultTier: "platinum", reason: "r" } },
      400,
      "VALIDATION_FAILED",
    );
    expect(unknownTier.body.error.message).toMatch(/platinum/);
    await refused(
      "PATCH",
      "/api/v1/settings",
      { as: admin(), body: { expectedVersion: version, defaultTier: "pro", reason: "stale" } },
      409,
      "VERSION_CONFLICT",
    );
    await refused(
      "PATCH",
      "/api/v1/settings",
      { as: operator(), body: { expectedVersion: version + 1, defaultTier: "pro", reason: "r" } },
      403,
      "FORBIDDEN",
    );
  });
});

describe("customers", () => {
  it("search by id prefix or name, a page at a time; 400 for a bad limit", async () => {
    const prefix = uniqueName("shop");
    for (let index = 0; index < 5; index++) {
      await changed(
        "POST",
        "/api/v1/customers",
        {
          as: operator(),
          body: {
            id: `${prefix}-${index}`,
            displayName: `Shop ${index} GmbH`,
            tier: "free",
            reason: "signed up",
          },
        },
        201,
      );
    }
    const first = await api.call("GET", `/api/v1/customers?search=${prefix}&limit=2`, {
      as: admin(),
    });
    expect(first.status).toBe(200);
    expect(first.body.customers.map((c: { id: string }) => c.id)).toEqual([
      `${prefix}-0`,
      `${prefix}-1`,
    ]);
    expect(first.body.nextCursor).toBe(`${prefix}-1`);
    const second = await api.call(
      "GET",
      `/api/v1/customers?search=${prefix}&limit=2&after=${first.body.nextCursor}`,
      { as: admin() },
    );
    expect(second.body.customers.map((c: { id: string }) => c.id)).toEqual([
      `${prefix}-2`,
      `${prefix}-3`,
    ]);
    const byName = await api.call("GET", "/api/v1/customers?search=umbrella", { as: admin() });
    expect(byName.body.customers.map((c: { id: string }) => c.id)).toEqual(["org:umbrella"]);
    const byTier = await api.call("GET", "/api/v1/customers?tier=enterprise", { as: admin() });
    expect(byTier.body.customers.map((c: { id: string }) => c.id)).toEqual(["acme"]);
    for (const query of ["limit=0", "limit=1.5", "limit=abc", "limit=201", "page=2", "search="]) {
      const response = await api.call("GET", `/api/v1/customers?${query}`, { as: admin() });
      expect(response.status, query).toBe(400);
      expect(response.body.error.fieldErrors[0].path).toMatch(/^query\./);
    }
  });

  it("GET one 200 and 404; POST 400 and 409; PATCH 200 and 409 stale; DELETE 409 with overrides, 200 without", async () => {
    const one = await api.call("GET", "/api/v1/customers/org:umbrella", { as: admin() });
    expect(one.body.customer).toMatchObject({ id: "org:umbrella", tier: "pro" });
    await refused("GET", "/api/v1/customers/nobody", { as: admin() }, 404, "NOT_FOUND");
    await refused(
      "POST",
      "/api/v1/customers",
      { as: operator(), body: { id: "has space", displayName: "x", tier: "gold", reason: "r" } },
      400,
      "VALIDATION_FAILED",
    );
    await refused(
      "POST",
      "/api/v1/customers",
      {
        as: operator(),
        body: { id: "acme", displayName: "Acme again", tier: "free", reason: "r" },
      },
      409,
      "CONFLICT",
    );
    const id = uniqueName("cust");
    await changed(
      "POST",
      "/api/v1/customers",
      {
        as: operator(),
        body: { id, displayName: "Initial", tier: "free", reason: "r" },
      },
      201,
    );
    const { entry } = await changed("PATCH", `/api/v1/customers/${id}`, {
      as: operator(),
      body: { expectedVersion: 1, tier: "pro", reason: "upgraded" },
    });
    expect(entry).toMatchObject({ action: "customer.update", customerId: id });
    await refused(
      "PATCH",
      `/api/v1/customers/${id}`,
      { as: operator(), body: { expectedVersion: 1, tier: "free", reason: "stale" } },
      409,
      "VERSION_CONFLICT",
    );
    await refused(
      "DELETE",
      "/api/v1/customers/globex",
      { as: operator(), body: { expectedVersion: 1, reason: "r" } },
      409,
      "CONFLICT",
    );
    await changed("DELETE", `/api/v1/customers/${id}`, {
      as: operator(),
      body: { expectedVersion: 2, reason: "churned" },
    });
  });
});

describe("customer overrides", () => {
  it("list, create on a layer, change and remove it; 404, 409 and 400 where they apply", async () => {
    const list = await api.call("GET", "/api/v1/customers/globex/overrides", { as: admin() });
    expect(list.body.overrides).toEqual([
      expect.objectContaining({ scope: "customer:globex/endpoint:reports", version: 1 }),
    ]);
    const { response } = await changed(
      "POST",
      "/api/v1/customers/initech/overrides",
      { as: operator(), body: { endpointClass: null, limit: bucket(40), reason: "contract" } },
      201,
    );
    expect(response.body.override).toMatchObject({ scope: "customer:initech", version: 1 });
    await refused(
      "POST",
      "/api/v1/customers/initech/overrides",
      { as: operator(), body: { endpointClass: null, limit: bucket(50), reason: "again" } },
      409,
      "CONFLICT",
    );
    await refused(
      "POST",
      "/api/v1/customers/nobody/overrides",
      { as: operator(), body: { endpointClass: null, limit: bucket(50), reason: "r" } },
      404,
      "NOT_FOUND",
    );
    const unknownClass = await refused(
      "POST",
      "/api/v1/customers/initech/overrides",
      { as: operator(), body: { endpointClass: "exports", limit: bucket(50), reason: "r" } },
      400,
      "VALIDATION_FAILED",
    );
    expect(unknownClass.body.error.fieldErrors).toEqual([
      { path: "endpointClass", message: 'there is no endpoint class "exports"' },
    ]);
    await changed("PATCH", "/api/v1/customers/initech/overrides/account", {
      as: operator(),
      body: { expectedVersion: 1, limit: bucket(60), reason: "more" },
    });
    await refused(
      "PATCH",
      "/api/v1/customers/initech/overrides/account",
      { as: operator(), body: { expectedVersion: 1, limit: bucket(70), reason: "stale" } },
      409,
      "VERSION_CONFLICT",
    );
    await changed("PATCH", "/api/v1/customers/globex/overrides/endpoints/reports", {
      as: operator(),
      body: { expectedVersion: 1, limit: bucket(400), reason: "quarter end" },
    });
    await refused(
      "PATCH",
      "/api/v1/customers/globex/overrides/endpoints/search",
      { as: operator(), body: { expectedVersion: 1, limit: bucket(70), reason: "r" } },
      404,
      "NOT_FOUND",
    );
    await changed("DELETE", "/api/v1/customers/initech/overrides/account", {
      as: operator(),
      body: { expectedVersion: 2, reason: "contract ended" },
    });
    await refused(
      "DELETE",
      "/api/v1/customers/initech/overrides/account",
      { as: operator(), body: { expectedVersion: 2, reason: "again" } },
      404,
      "NOT_FOUND",
    );
    await changed("DELETE", "/api/v1/customers/globex/overrides/endpoints/reports", {
      as: operator(),
      body: { expectedVersion: 2, reason: "back to the tier" },
    });
  });
});
