/**
 * Incident overrides (raise, extend, revert, list, get) and dry-run candidates (create, update,
 * promote, discard, list, get) through the API: success, bad input, not found and conflict, and
 * nothing written by a refused change.
 */
import { describe, expect, it } from "vitest";
import { type CallOptions, provideApiHarness } from "./helpers/api-harness";
import { uniqueName } from "./helpers/policy-fixtures";

const api = provideApiHarness();
const operator = () => ({ token: api.as("operator").token });
const admin = () => ({ token: api.as("admin").token });
const MINUTE_MS = 60_000;

async function refused(
  method: string,
  path: string,
  options: CallOptions,
  status: number,
  code: string,
) {
  const before = await api.fingerprint();
  const response = await api.call(method, path, options);
  expect(response.status, response.text).toBe(status);
  expect(response.body.error.code).toBe(code);
  expect(await api.fingerprint()).toEqual(before);
  return response;
}

describe("incident overrides", () => {
  it("raise 201 for 15 minutes with a reason; the audit entry and the new version say so", async () => {
    const response = await api.call("POST", "/api/v1/incidents", {
      as: { session: api.as("operator").session },
      body: {
        customerId: "initech",
        endpointClass: "search",
        factor: 3,
        durationMs: 15 * MINUTE_MS,
        ticketUrl: "https://tickets.example.com/INC-7",
        reason: "Initech is replaying a backlog",
      },
    });
    expect(response.status, response.text).toBe(201);
    const { incident } = response.body;
    expect(incident).toMatchObject({
      customerId: "initech",
      endpointClass: "search",
      factor: 3,
      owner: "Operator Person",
      reason: "Initech is replaying a backlog",
      createdBy: "Operator Person",
      version: 1,
    });
    expect(Date.parse(incident.expiresAt) - Date.parse(incident.startsAt)).toBe(15 * MINUTE_MS);
    expect(response.body.policyVersion).toEqual(expect.any(Number));
    const entry = await api.db().auditEntry.findFirstOrThrow({
      where: { id: BigInt(response.body.auditEntryId) },
    });
    expect(entry).toMatchObject({
      action: "incident.raise",
      actorType: "operator",
      actorId: api.as("operator").operatorId,
      customerId: "initech",
      policyVersion: response.body.policyVersion,
    });

    const got = await api.call("GET", `/api/v1/incidents/${incident.id}`, { as: operator() });
    expect(got.body.incident).toMatchObject({ id: incident.id, state: "active" });
    const current = await api.call("GET", "/api/v1/incidents?customerId=initech", {
      as: operator(),
    });
    expect(current.body.incidents.map((i: { id: string }) => i.id)).toContain(incident.id);
  });

  it("raise 400 beyond the guardrails, without factor or limit, or with an unknown field; nothing written", async () => {
    for (const [body, path] of [
      [{ customerId: "initech", factor: 50, durationMs: MINUTE_MS, reason: "r" }, "factor"],
      [{ customerId: "initech", factor: 2, durationMs: 3 * 86_400_000, reason: "r" }, "expiresAt"],
      [{ customerId: "initech", durationMs: MINUTE_MS, reason: "r" }, "factor"],
      [{ customerId: "initech", factor: 2, reason: "r" }, "expiresAt"],
      [
        { customerId: "initech", factor: 2, durationMs: MINUTE_MS, reason: "r", approvedBy: "me" },
        "approvedBy",
      ],
    ] as const) {
      const response = await refused(
        "POST",
        "/api/v1/incidents",
        { as: operator(), body },
        400,
        "VALIDATION_FAILED",
      );
      expect(
        response.body.error.fieldErrors.map((error: { path: string }) => error.path),
        JSON.stringify(body),
      ).toContain(path);
    }
  });

  it("raise 400 when it overlaps a current incident on the same customer and layer", async () => {
    const body = {
      customerId: "globex",
      endpointClass: "reports",
      factor: 2,
      durationMs: 10 * MINUTE_MS,
      reason: "first",
    };
    expect((await api.call("POST", "/api/v1/incidents", { as: operator(), body })).status).toBe(
      201,
    );
    // The policy's own rule (@limitplane/enforcer/policy): reported as the field to fix, so 400, not 409.
    const overlap = await refused(
      "POST",
      "/api/v1/incidents",
      { as: operator(), body: { ...body, reason: "second" } },
      400,
      "VALIDATION_FAILED",
    );
    expect(overlap.body.error.message).toMatch(/overlap/i);
  });

  it("extend 200, then 409 on the old version; revert 200, then 409 (no longer current); 404", async () => {
    const raised = await api.call("POST", "/api/v1/incidents", {
      as: operator(),
      body: {
        customerId: "acme",
        endpointClass: "reports",
        factor: 2,
        durationMs: 10 * MINUTE_MS,
        reason: "backfill",
      },
    });
    expect(raised.status, raised.text).toBe(201);
    const id = raised.body.incident.id;
    const extended = await api.call("POST", `/api/v1/incidents/${id}/extend`, {
      as: operator(),
      body: { expectedVersion: 1, durationMs: 30 * MINUTE_MS, reason: "still catching up" },
    });
    expect(extended.status, extended.text).toBe(200);
    expect(extended.body.incident.version).toBe(2);
    await refused(
      "POST",
      `/api/v1/incidents/${id}/extend`,
      { as: operator(), body: { expectedVersion: 1, durationMs: 40 * MINUTE_MS, reason: "stale" } },
      409,
      "VERSION_CONFLICT",
    );
    const shorter = await refused(
      "POST",
      `/api/v1/incidents/${id}/extend`,
      {
        as: operator(),
        body: { expectedVersion: 2, durationMs: 5 * MINUTE_MS, reason: "shorter" },
      },
      400,
      "VALIDATION_FAILED",
    );
    expect(shorter.body.error.fieldErrors[0].message).toMatch(/revert it/);
    const reverted = await api.call("POST", `/api/v1/incidents/${id}/revert`, {
      as: operator(),
      body: { expectedVersion: 2, reason: "done" },
    });
    expect(reverted.status).toBe(200);
    expect(reverted.body.incident).toMatchObject({ revokedBy: "operator token", version: 3 });
    await refused(
      "POST",
      `/api/v1/incidents/${id}/revert`,
      { as: operator(), body: { expectedVersion: 3, reason: "again" } },
      409,
      "CONFLICT",
    );
    const history = await api.call("GET", "/api/v1/incidents?status=history&customerId=acme", {
      as: operator(),
    });
    expect(history.body.incidents.find((i: { id: string }) => i.id === id)).toMatchObject({
      state: "reverted",
    });
    await refused("GET", "/api/v1/incidents/inc-nope", { as: operator() }, 404, "NOT_FOUND");
    await refused(
      "POST",
      "/api/v1/incidents/inc-nope/revert",
      { as: operator(), body: { expectedVersion: 1, reason: "r" } },
      404,
      "NOT_FOUND",
    );
    const badStatus = await api.call("GET", "/api/v1/incidents?status=soon", { as: operator() });
    expect(badStatus.status).toBe(400);
  });

  it("a viewer may read incidents and may not raise one", async () => {
    const viewer = { token: api.as("viewer").token };
    expect((await api.call("GET", "/api/v1/incidents", { as: viewer })).status).toBe(200);
    await refused(
      "POST",
      "/api/v1/incidents",
      { as: viewer, body: { customerId: "acme", factor: 2, durationMs: MINUTE_MS, reason: "r" } },
      403,
      "FORBIDDEN",
    );
  });
});

describe("dry-run candidates", () => {
  const limit = { algorithm: "token-bucket", capacity: 15, refillPerSec: 5 };

  it("create 201, update 200 and 409 stale, discard 200 and then 404", async () => {
    const id = uniqueName("cand");
    const created = await api.call("POST", "/api/v1/candidates", {
      as: operator(),
      body: { id, target: "tier:pro/endpoint:search", limit, reason: "try stricter search" },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.candidate).toMatchObject({ id, createdBy: "operator token", version: 1 });
    await refused(
      "POST",
      "/api/v1/candidates",
      { as: operator(), body: { id, target: "tier:pro", limit, reason: "again" } },
      409,
      "CONFLICT",
    );
    const badTarget = await refused(
      "POST",
      "/api/v1/candidates",
      { as: operator(), body: { target: "customer:acme", limit, reason: "r" } },
      400,
      "VALIDATION_FAILED",
    );
    expect(badTarget.body.error.fieldErrors[0].path).toBe("target");
    const updated = await api.call("PATCH", `/api/v1/candidates/${id}`, {
      as: operator(),
      body: { expectedVersion: 1, limit: { ...limit, capacity: 12 }, reason: "stricter still" },
    });
    expect(updated.status).toBe(200);
    await refused(
      "PATCH",
      `/api/v1/candidates/${id}`,
      { as: operator(), body: { expectedVersion: 1, limit, reason: "stale" } },
      409,
      "VERSION_CONFLICT",
    );
    const list = await api.call("GET", "/api/v1/candidates", {
      as: { token: api.as("viewer").token },
    });
    expect(list.body.candidates.map((c: { id: string }) => c.id)).toContain(id);
    const discarded = await api.call("POST", `/api/v1/candidates/${id}/discard`, {
      as: operator(),
      body: { expectedVersion: 2, reason: "too strict" },
    });
    expect(discarded.status).toBe(200);
    await refused("GET", `/api/v1/candidates/${id}`, { as: operator() }, 404, "NOT_FOUND");
    await refused(
      "POST",
      `/api/v1/candidates/${id}/discard`,
      { as: operator(), body: { expectedVersion: 2, reason: "again" } },
      404,
      "NOT_FOUND",
    );
  });

  it("promote: 403 for an operator, 200 for an admin, recorded on the tier it replaced", async () => {
    const id = uniqueName("promo");
    await api.call("POST", "/api/v1/candidates", {
      as: operator(),
      body: { id, target: "tier:pro/endpoint:search", limit, reason: "stricter search for pro" },
    });
    await refused(
      "POST",
      `/api/v1/candidates/${id}/promote`,
      { as: operator(), body: { expectedVersion: 1, reason: "ship it" } },
      403,
      "FORBIDDEN",
    );
    await refused(
      "POST",
      `/api/v1/candidates/${id}/promote`,
      { as: admin(), body: { expectedVersion: 3, reason: "ship it" } },
      409,
      "VERSION_CONFLICT",
    );
    const promoted = await api.call("POST", `/api/v1/candidates/${id}/promote`, {
      as: admin(),
      body: { expectedVersion: 1, reason: "no false positives in a week" },
    });
    expect(promoted.status, promoted.text).toBe(200);
    const entry = await api.db().auditEntry.findFirstOrThrow({
      where: { id: BigInt(promoted.body.auditEntryId) },
    });
    expect(entry).toMatchObject({
      action: "candidate.promote",
      entityType: "endpoint-class",
      entityId: "search",
    });
    const search = await api.call("GET", "/api/v1/endpoint-classes/search", { as: admin() });
    expect(search.body.endpointClass.limits.pro).toMatchObject({ capacity: 15, mode: "enforce" });
  });
});
