/**
 * Staged changes meet the rest of the policy's safety: an import that would change a rule under a
 * staged change, or drop or rewrite its candidate, is refused (409, nothing written) while an
 * export's round trip goes through; with approvals on, a staged change that lowers a tier too far
 * is held back like the edit it ends in, and once another admin approves its request it starts as
 * a staged change (its first slice) rather than applying to everyone; the guard defaults in the
 * settings (200, 400, 403, 409, audited) are what a staged change started without its own gets.
 */
import { describe, expect, it } from "vitest";
import { signIn } from "@/lib/control/auth/sign-in";
import { createOperator } from "@/lib/control/operator/create-operator";
import { type CallOptions, provideApiHarness, TEST_PASSWORD } from "./helpers/api-harness";
import { uniqueName } from "./helpers/policy-fixtures";

const api = provideApiHarness();
const admin = () => ({ token: api.as("admin").token });
const steps = [
  { percent: 10, dwellMs: 600_000 },
  { percent: 100, dwellMs: 600_000 },
];

async function call(method: string, path: string, options: CallOptions, status: number) {
  const response = await api.call(method, path, options);
  expect(response.status, response.text).toBe(status);
  return response;
}

async function refused(method: string, path: string, options: CallOptions, code: string) {
  const before = await api.fingerprint();
  const response = await call(method, path, options, 409);
  expect(response.body.error.code).toBe(code);
  expect(await api.fingerprint()).toEqual(before);
  return response;
}

describe("a staged limit the policy refuses", () => {
  it("is a 400 naming the field, and writes nothing", async () => {
    const before = await api.fingerprint();
    const response = await call(
      "POST",
      "/api/v1/staged-changes",
      {
        as: admin(),
        body: {
          target: "tier:free",
          // Below the cost of the most expensive endpoint class: no such request could pass.
          limit: { algorithm: "token-bucket", capacity: 1, refillPerSec: 1 },
          steps,
          reason: "too strict to be a limit",
        },
      },
      400,
    );
    expect(response.body.error.code).toBe("VALIDATION_FAILED");
    expect(JSON.stringify(response.body.error.fieldErrors)).toContain("capacity 1 is less than");
    expect(await api.fingerprint()).toEqual(before);
  });
});

describe("an import while a staged change runs", () => {
  it("is refused when it changes the staged rule or drops its candidate, and goes through as exported", async () => {
    const id = uniqueName("import-staged");
    await call(
      "POST",
      "/api/v1/staged-changes",
      {
        as: admin(),
        body: {
          id,
          target: "tier:pro",
          limit: { algorithm: "token-bucket", capacity: 150, refillPerSec: 75 },
          steps,
          reason: "a little stricter, carefully",
        },
      },
      201,
    );
    const exported = await call("GET", "/api/v1/policy/export", { as: admin() }, 200);
    const document = JSON.parse(exported.text);

    // The file changes the rule the staged change is rolling out.
    const changedRule = {
      ...document,
      tiers: document.tiers.map((tier: { name: string; limit: { capacity: number } }) =>
        tier.name === "pro" ? { ...tier, limit: { ...tier.limit, capacity: 170 } } : tier,
      ),
    };
    const rule = await refused(
      "POST",
      "/api/v1/policy/import?reason=restore",
      { as: admin(), body: changedRule },
      "CONFLICT",
    );
    expect(rule.body.error.message).toBe(
      `Nothing was imported: the file changes the limit of tier:pro, which staged change "${id}" is rolling out. Complete or abort the staged change first, or keep its rule and candidate in the file as they stand.`,
    );

    // The file leaves out the candidate that carries the staged change.
    const dropped = {
      ...document,
      dryRunCandidates: document.dryRunCandidates.filter(
        (candidate: { id: string }) => candidate.id !== id,
      ),
    };
    const drop = await refused(
      "POST",
      "/api/v1/policy/import?reason=restore",
      { as: admin(), body: dropped },
      "CONFLICT",
    );
    expect(drop.body.error.fieldErrors).toEqual([
      {
        path: "dryRunCandidates",
        message: `the file leaves out dry-run candidate "${id}", which carries staged change "${id}"`,
      },
    ]);

    // Anything else may change: the staged rule and candidate stay as they stand.
    const elsewhere = {
      ...document,
      tiers: document.tiers.map((tier: { name: string; limit: { capacity: number } }) =>
        tier.name === "free" ? { ...tier, limit: { ...tier.limit, capacity: 21 } } : tier,
      ),
    };
    const imported = await call(
      "POST",
      "/api/v1/policy/import?reason=restore",
      { as: admin(), body: elsewhere },
      200,
    );
    expect(imported.body.isNoChange).toBe(false);
    const staged = await call("GET", `/api/v1/staged-changes/${id}`, { as: admin() }, 200);
    expect(staged.body.stagedChange).toMatchObject({ state: "running", sliceBasisPoints: 1000 });
    const candidate = await api.db().dryRunCandidate.findUniqueOrThrow({ where: { id } });
    expect(candidate.sliceBasisPoints).toBe(1000);

    await call(
      "POST",
      `/api/v1/staged-changes/${id}/abort`,
      { as: admin(), body: { expectedVersion: 1, reason: "done here" } },
      200,
    );
  });
});

describe("a staged change under approvals", () => {
  it("lowering a tier too far is held back, and an approved request starts it as a staged change", async () => {
    const deps = api.authDeps();
    const email = `staged-approver-${uniqueName("a")}@limitplane.test`;
    await createOperator(
      { email, name: "Second Admin", role: "admin", password: TEST_PASSWORD },
      { actor: { type: "system", id: null, name: "test setup" }, reason: "second approver" },
      deps,
    );
    const approver = await signIn(
      { email, password: TEST_PASSWORD, address: "10.9.9.7", userAgent: "limitplane-tests" },
      deps,
    );
    const settings = await call("GET", "/api/v1/approval-settings", { as: admin() }, 200);
    await call(
      "PATCH",
      "/api/v1/approval-settings",
      {
        as: admin(),
        body: {
          expectedVersion: settings.body.settings.version,
          isEnabled: true,
          reason: "four eyes",
        },
      },
      200,
    );
    const change = {
      target: "tier:enterprise",
      limit: { algorithm: "token-bucket", capacity: 10, refillPerSec: 5 },
      steps,
    };
    const held = await refused(
      "POST",
      "/api/v1/staged-changes",
      { as: admin(), body: { ...change, reason: "cut enterprise, carefully" } },
      "APPROVAL_REQUIRED",
    );
    expect(held.body.error.details.gatedBy).toHaveLength(1);
    expect(held.body.error.details.gatedBy[0]).toMatch(
      /^tier "enterprise"'s limit is lowered by \d+ % \(more than 25 %\)$/,
    );

    const requested = await call(
      "POST",
      "/api/v1/change-requests",
      {
        as: admin(),
        body: {
          change: { kind: "staged-change.start", ...change },
          reason: "cut enterprise, carefully",
        },
      },
      201,
    );
    const request = requested.body.changeRequest;
    expect(request).toMatchObject({ action: "staged-change.start", entityType: "staged-change" });
    expect(request.gatedBy).toEqual(held.body.error.details.gatedBy);
    expect(request.diff.after).toMatchObject({ target: "tier:enterprise", steps });
    const enterpriseBefore = await call("GET", "/api/v1/tiers/enterprise", { as: admin() }, 200);

    const approved = await call(
      "POST",
      `/api/v1/change-requests/${request.id}/approve`,
      {
        as: { session: approver.sessionToken },
        body: { expectedVersion: request.version, reason: "staged is fine" },
      },
      200,
    );
    expect(approved.body.changeRequest.status).toBe("approved");
    const applied = await api.db().auditEntry.findUniqueOrThrow({
      where: { id: BigInt(approved.body.auditEntryId) },
    });
    expect(applied).toMatchObject({ action: "staged-change.start", entityType: "staged-change" });
    const staged = await call(
      "GET",
      `/api/v1/staged-changes/${applied.entityId}`,
      { as: admin() },
      200,
    );
    expect(staged.body.stagedChange).toMatchObject({
      target: "tier:enterprise",
      state: "running",
      stepIndex: 0,
      sliceBasisPoints: 1000,
    });
    // The tier itself is untouched until the staged change completes.
    const enterpriseAfter = await call("GET", "/api/v1/tiers/enterprise", { as: admin() }, 200);
    expect(enterpriseAfter.body.tier.limit).toEqual(enterpriseBefore.body.tier.limit);
  });
});

describe("the guard defaults", () => {
  it("are saved audited, refused when wrong, and given to staged changes started without a guard", async () => {
    const read = await call(
      "GET",
      "/api/v1/staged-guard-settings",
      { as: { token: api.as("viewer").token } },
      200,
    );
    expect(read.body.settings).toEqual({
      guard: { marginPercent: 5, minRequests: 100, windowMs: 60_000, consecutiveWindows: 3 },
      version: 0,
      createdAt: null,
      updatedAt: null,
    });
    const bad = await api.call("PATCH", "/api/v1/staged-guard-settings", {
      as: admin(),
      body: { expectedVersion: 0, windowMs: 10, reason: "too fine" },
    });
    expect(bad.status, bad.text).toBe(400);
    expect(bad.body.error.fieldErrors).toEqual([
      { path: "windowMs", message: "windowMs must be at least 1000 (1 s)" },
    ]);
    const forbidden = await api.call("PATCH", "/api/v1/staged-guard-settings", {
      as: { token: api.as("operator").token },
      body: { expectedVersion: 0, marginPercent: 2, reason: "not mine to change" },
    });
    expect(forbidden.status, forbidden.text).toBe(403);

    const saved = await call(
      "PATCH",
      "/api/v1/staged-guard-settings",
      {
        as: admin(),
        body: { expectedVersion: 0, marginPercent: 2.5, windowMs: 30_000, reason: "tighter" },
      },
      200,
    );
    expect(saved.body.settings).toMatchObject({
      guard: { marginPercent: 2.5, minRequests: 100, windowMs: 30_000, consecutiveWindows: 3 },
      version: 1,
    });
    const entry = await api.db().auditEntry.findUniqueOrThrow({
      where: { id: BigInt(saved.body.auditEntryId) },
    });
    expect(entry).toMatchObject({
      action: "staged-guard-settings.update",
      entityType: "staged-guard-settings",
      reason: "tighter",
    });
    expect(entry.before).toMatchObject({ marginPercent: 5, windowMs: 60_000, version: 0 });
    expect(entry.after).toMatchObject({ marginPercent: 2.5, windowMs: 30_000, version: 1 });
    await refused(
      "PATCH",
      "/api/v1/staged-guard-settings",
      { as: admin(), body: { expectedVersion: 0, minRequests: 5, reason: "stale" } },
      "VERSION_CONFLICT",
    );

    // A staged change without a guard gets the defaults; with some fields, the rest from them.
    const plain = await call(
      "POST",
      "/api/v1/staged-changes",
      {
        as: admin(),
        body: {
          target: "tier:free",
          limit: { algorithm: "token-bucket", capacity: 19, refillPerSec: 9 },
          steps,
          reason: "defaults",
        },
      },
      201,
    );
    expect(plain.body.stagedChange.guard).toEqual({
      marginPercent: 2.5,
      minRequests: 100,
      windowMs: 30_000,
      consecutiveWindows: 3,
    });
    await call(
      "POST",
      `/api/v1/staged-changes/${plain.body.stagedChange.id}/abort`,
      { as: admin(), body: { expectedVersion: 1, reason: "next" } },
      200,
    );
    const own = await call(
      "POST",
      "/api/v1/staged-changes",
      {
        as: admin(),
        body: {
          target: "tier:free",
          limit: { algorithm: "token-bucket", capacity: 19, refillPerSec: 9 },
          steps,
          guard: { minRequests: 10 },
          reason: "its own minimum",
        },
      },
      201,
    );
    expect(own.body.stagedChange.guard).toEqual({
      marginPercent: 2.5,
      minRequests: 10,
      windowMs: 30_000,
      consecutiveWindows: 3,
    });
  });
});
