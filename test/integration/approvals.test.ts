/**
 * Required approval through the API: the settings (off by default; on only with two eligible
 * approvers), the gate on dangerous edits, and change requests from request to decision: who may
 * approve (never the author, never a token), stale and expired requests, withdrawal, a real race
 * of approve against reject (exactly one wins), the three linked audit entries, the worker's
 * expiry, the webhook notices, and hostile input. A refusal writes nothing.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { deliverAlertWebhooks } from "@/lib/control/alerts/deliver-alert-webhooks";
import { signIn } from "@/lib/control/auth/sign-in";
import { expireChangeRequests } from "@/lib/control/change-request/expire-change-requests";
import { createOperator } from "@/lib/control/operator/create-operator";
import {
  type ApiResponse,
  type CallOptions,
  provideApiHarness,
  TEST_PASSWORD,
} from "./helpers/api-harness";
import { waitFor } from "./helpers/wait-for";

const api = provideApiHarness();
const adminToken = () => ({ token: api.as("admin").token });
const adminSession = () => ({ session: api.as("admin").session });
const bucket = (capacity: number) => ({
  algorithm: "token-bucket" as const,
  capacity,
  refillPerSec: capacity / 2,
});

/** Further admins, each signed in with a session of their own. */
const admins: { id: string; session: string }[] = [];
async function addAdmin(label: string): Promise<{ id: string; session: string }> {
  const deps = api.authDeps();
  const email = `${label}-${admins.length}@limitplane.test`;
  const { operator } = await createOperator(
    { email, name: `Admin ${label}`, role: "admin", password: TEST_PASSWORD },
    { actor: { type: "system", id: null, name: "test setup" }, reason: "second approver" },
    deps,
  );
  const session = await signIn(
    { email, password: TEST_PASSWORD, address: "10.9.9.8", userAgent: "limitplane-tests" },
    deps,
  );
  const admin = { id: operator.id, session: session.sessionToken };
  admins.push(admin);
  return admin;
}

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
  expect(await api.fingerprint()).toEqual(before);
  return response;
}

async function ok(method: string, path: string, options: CallOptions, status = 200) {
  const response = await api.call(method, path, options);
  expect(response.status, response.text).toBe(status);
  return response;
}

async function settingsVersion(): Promise<number> {
  const response = await ok("GET", "/api/v1/settings", { as: adminToken() });
  return response.body.settings.version;
}

async function tierVersion(name: string): Promise<number> {
  const response = await ok("GET", `/api/v1/tiers/${name}`, { as: adminToken() });
  return response.body.tier.version;
}

/** A ceiling change requested by `as`; returns the request. */
async function requestCeilingChange(as: CallOptions["as"], capacity: number) {
  const response = await ok(
    "POST",
    "/api/v1/change-requests",
    {
      as,
      body: {
        change: {
          kind: "settings.update",
          expectedVersion: await settingsVersion(),
          ceilings: { perCustomer: bucket(capacity) },
        },
        reason: "tighten the per-customer ceiling",
      },
    },
    201,
  );
  return response.body.changeRequest;
}

describe("approval settings", () => {
  it("are off by default, and turning them on with one eligible approver is refused with why", async () => {
    const read = await ok("GET", "/api/v1/approval-settings", {
      as: { token: api.as("viewer").token },
    });
    expect(read.body.settings).toMatchObject({
      isEnabled: false,
      limitDecreasePercent: 25,
      isCeilingChangeGated: true,
      isDeletionGated: true,
      importChangedEntries: 100,
      version: 0,
    });
    // The harness has exactly one admin operator.
    const refusal = await refused(
      "PATCH",
      "/api/v1/approval-settings",
      { as: adminToken(), body: { expectedVersion: 0, isEnabled: true, reason: "four eyes" } },
      409,
      "CONFLICT",
    );
    expect(refusal.body.error.message).toContain("at least 2 enabled admins");
    expect(refusal.body.error.message).toContain("there is 1");
    await refused(
      "PATCH",
      "/api/v1/approval-settings",
      {
        as: { token: api.as("operator").token },
        body: { expectedVersion: 0, isEnabled: true, reason: "r" },
      },
      403,
      "FORBIDDEN",
    );
  });

  it("turn on once a second admin exists, audited", async () => {
    await addAdmin("second");
    const response = await ok("PATCH", "/api/v1/approval-settings", {
      as: adminToken(),
      body: { expectedVersion: 0, isEnabled: true, reason: "four eyes on dangerous changes" },
    });
    expect(response.body.settings).toMatchObject({ isEnabled: true, version: 1 });
    const entry = await api.db().auditEntry.findFirstOrThrow({
      where: { id: BigInt(response.body.auditEntryId) },
    });
    expect(entry).toMatchObject({
      action: "approval-settings.update",
      entityType: "approval-settings",
      reason: "four eyes on dangerous changes",
    });
    expect(entry.before).toMatchObject({ isEnabled: false, version: 0 });
    expect(entry.after).toMatchObject({ isEnabled: true, version: 1 });
    await refused(
      "PATCH",
      "/api/v1/approval-settings",
      { as: adminToken(), body: { expectedVersion: 0, limitDecreasePercent: 10, reason: "r" } },
      409,
      "VERSION_CONFLICT",
    );
  });
});

describe("the gate on direct edits", () => {
  it("refuses a tier limit lowered by more than 25 %, and lets 20 % through", async () => {
    const refusal = await refused(
      "PATCH",
      "/api/v1/tiers/pro",
      {
        as: adminToken(),
        body: {
          expectedVersion: await tierVersion("pro"),
          limit: bucket(100),
          reason: "halve pro",
        },
      },
      409,
      "APPROVAL_REQUIRED",
    );
    expect(refusal.body.error.details.gatedBy).toEqual([
      'tier "pro"\'s limit is lowered by 50 % (more than 25 %)',
    ]);
    // 200 -> 160 capacity and 100 -> 80 per second: 20 %.
    await ok("PATCH", "/api/v1/tiers/pro", {
      as: adminToken(),
      body: { expectedVersion: await tierVersion("pro"), limit: bucket(160), reason: "trim pro" },
    });
  });

  it("refuses any ceiling change, a tier deletion and a class limit lowered too far", async () => {
    await refused(
      "PATCH",
      "/api/v1/settings",
      {
        as: adminSession(),
        body: {
          expectedVersion: await settingsVersion(),
          ceilings: { perAddress: bucket(200) },
          reason: "raise",
        },
      },
      409,
      "APPROVAL_REQUIRED",
    );
    await ok(
      "POST",
      "/api/v1/tiers",
      { as: adminToken(), body: { name: "trial", limit: bucket(10), reason: "short-lived" } },
      201,
    );
    await refused(
      "DELETE",
      "/api/v1/tiers/trial",
      { as: adminToken(), body: { expectedVersion: 1, reason: "gone" } },
      409,
      "APPROVAL_REQUIRED",
    );
    const reports = await ok("GET", "/api/v1/endpoint-classes/reports", { as: adminToken() });
    const { limits, version } = reports.body.endpointClass;
    const refusal = await refused(
      "PATCH",
      "/api/v1/endpoint-classes/reports",
      {
        as: adminToken(),
        body: { expectedVersion: version, limits: { ...limits, free: bucket(1) }, reason: "r" },
      },
      409,
      "APPROVAL_REQUIRED",
    );
    expect(refusal.body.error.details.gatedBy[0]).toContain(
      'endpoint class "reports"\'s limit for tier "free"',
    );
  });
});

describe("change requests", () => {
  it("a token requests a ceiling change; the token and the author cannot approve; another admin does, with three linked audit entries", async () => {
    const request = await requestCeilingChange(adminSession(), 8000);
    expect(request).toMatchObject({
      status: "pending",
      action: "settings.update",
      gatedBy: ["the global ceilings change"],
      isStale: false,
      author: { type: "operator", id: api.as("admin").operatorId },
      version: 1,
    });
    expect(request.diff.before.ceilings.perCustomer.capacity).toBe(10000);
    expect(request.diff.after.ceilings.perCustomer.capacity).toBe(8000);
    expect(request.preview.limits.length).toBeGreaterThan(0);
    expect(request.backtest).not.toBeNull();

    const path = `/api/v1/change-requests/${request.id}/approve`;
    const byToken = await refused(
      "POST",
      path,
      { as: adminToken(), body: { expectedVersion: 1, reason: "approve it" } },
      403,
      "FORBIDDEN",
    );
    expect(byToken.body.error.message).toContain(
      "API token may request a change but never approve",
    );
    const byAuthor = await refused(
      "POST",
      path,
      { as: adminSession(), body: { expectedVersion: 1, reason: "approve it" } },
      403,
      "FORBIDDEN",
    );
    expect(byAuthor.body.error.message).toContain("another admin must approve");
    await refused(
      "POST",
      path,
      {
        as: { session: api.as("operator").session },
        body: { expectedVersion: 1, reason: "approve it" },
      },
      403,
      "FORBIDDEN",
    );
    // Cross-site: a session's POST from another origin.
    const approver = admins[0];
    if (approver === undefined) throw new Error("no second admin");
    await refused(
      "POST",
      path,
      {
        as: { session: approver.session },
        origin: "https://evil.example",
        body: { expectedVersion: 1, reason: "approve it" },
      },
      403,
      "CROSS_SITE_REQUEST",
    );

    const approved = await ok("POST", path, {
      as: { session: approver.session },
      body: { expectedVersion: 1, reason: "checked the backtest" },
    });
    expect(approved.body.changeRequest).toMatchObject({
      status: "approved",
      decision: { byId: approver.id, note: "checked the backtest" },
      version: 2,
    });
    expect(approved.body.policyVersion).toEqual(expect.any(Number));
    const settings = await ok("GET", "/api/v1/settings", { as: adminToken() });
    expect(settings.body.settings.ceilings.perCustomer.capacity).toBe(8000);

    const links = approved.body.changeRequest.auditEntries;
    const [requested, decided, applied] = await Promise.all(
      [links.request, links.decision, links.applied].map((id: string) =>
        api.db().auditEntry.findUniqueOrThrow({ where: { id: BigInt(id) } }),
      ),
    );
    expect(requested).toMatchObject({
      action: "change-request.create",
      entityType: "change-request",
      entityId: request.id,
      actorId: api.as("admin").operatorId,
      reason: "tighten the per-customer ceiling",
    });
    expect(applied).toMatchObject({
      action: "settings.update",
      actorId: approver.id,
      policyVersion: approved.body.policyVersion,
    });
    expect(applied?.reason).toContain(request.id);
    expect(decided).toMatchObject({
      action: "change-request.approve",
      entityId: request.id,
      actorId: approver.id,
      reason: "checked the backtest",
    });
    expect(decided?.after).toMatchObject({
      appliedAuditEntryId: links.applied,
      appliedPolicyVersion: approved.body.policyVersion,
    });
    // Approving twice: the second gets 409.
    await refused(
      "POST",
      path,
      { as: { session: approver.session }, body: { expectedVersion: 2, reason: "approve it" } },
      409,
      "CONFLICT",
    );
  });

  it("a stale request cannot be approved until it is re-previewed; the old version then conflicts", async () => {
    const request = await ok(
      "POST",
      "/api/v1/change-requests",
      {
        as: adminToken(),
        body: {
          change: {
            kind: "tier.update",
            name: "enterprise",
            expectedVersion: await tierVersion("enterprise"),
            limit: bucket(1000),
          },
          reason: "enterprise was oversized",
        },
      },
      201,
    ).then((response) => response.body.changeRequest);
    expect(request.gatedBy).toEqual([
      'tier "enterprise"\'s limit is lowered by 80 % (more than 25 %)',
    ]);
    // Any policy change makes it stale: raise the free tier (no approval needed).
    await ok("PATCH", "/api/v1/tiers/free", {
      as: adminToken(),
      body: { expectedVersion: await tierVersion("free"), limit: bucket(40), reason: "free grows" },
    });
    const read = await ok("GET", `/api/v1/change-requests/${request.id}`, {
      as: { token: api.as("viewer").token },
    });
    expect(read.body.changeRequest.isStale).toBe(true);
    const approver = admins[0];
    if (approver === undefined) throw new Error("no second admin");
    const path = `/api/v1/change-requests/${request.id}/approve`;
    const stale = await refused(
      "POST",
      path,
      { as: { session: approver.session }, body: { expectedVersion: 1, reason: "approve it" } },
      409,
      "STALE_CHANGE_REQUEST",
    );
    expect(stale.body.error.message).toContain("Re-preview");
    const refreshed = await ok("POST", `/api/v1/change-requests/${request.id}/preview`, {
      as: adminToken(),
      body: { expectedVersion: 1, reason: "re-preview after the free tier grew" },
    });
    expect(refreshed.body.changeRequest).toMatchObject({ isStale: false, version: 2 });
    await refused(
      "POST",
      path,
      { as: { session: approver.session }, body: { expectedVersion: 1, reason: "approve it" } },
      409,
      "VERSION_CONFLICT",
    );
    const approved = await ok("POST", path, {
      as: { session: approver.session },
      body: { expectedVersion: 2, reason: "approve it" },
    });
    expect(approved.body.changeRequest.status).toBe("approved");
    const tier = await ok("GET", "/api/v1/tiers/enterprise", { as: adminToken() });
    expect(tier.body.tier.limit.capacity).toBe(1000);
  });

  it("an expired request cannot be approved, and the worker's sweep records its expiry once", async () => {
    const settings = await ok("GET", "/api/v1/approval-settings", { as: adminToken() });
    await ok("PATCH", "/api/v1/approval-settings", {
      as: adminToken(),
      body: {
        expectedVersion: settings.body.settings.version,
        requestLifetimeMs: 60_000,
        reason: "short for the test",
      },
    });
    const request = await requestCeilingChange(adminToken(), 7000);
    api.advanceClock(61_000);
    const approver = admins[0];
    if (approver === undefined) throw new Error("no second admin");
    const refusal = await refused(
      "POST",
      `/api/v1/change-requests/${request.id}/approve`,
      { as: { session: approver.session }, body: { expectedVersion: 1, reason: "approve it" } },
      409,
      "CONFLICT",
    );
    expect(refusal.body.error.message).toContain("expired");
    const deps = { db: api.db(), clock: { nowMs: api.nowMs } };
    expect(await expireChangeRequests(deps, { limit: 100 })).toBeGreaterThanOrEqual(1);
    expect(await expireChangeRequests(deps, { limit: 100 })).toBe(0);
    const row = await api.db().changeRequest.findUniqueOrThrow({ where: { id: request.id } });
    expect(row.status).toBe("expired");
    const expiry = await api.db().auditEntry.findMany({
      where: {
        entityType: "change-request",
        entityId: request.id,
        action: "change-request.expire",
      },
    });
    expect(expiry).toHaveLength(1);
    expect(expiry[0]?.actorType).toBe("system");
    await ok("PATCH", "/api/v1/approval-settings", {
      as: adminToken(),
      body: {
        expectedVersion: settings.body.settings.version + 1,
        requestLifetimeMs: 3 * 24 * 3_600_000,
        reason: "back to three days",
      },
    });
  });

  it("only the author withdraws; a withdrawn request cannot be approved; reject needs a reason", async () => {
    const request = await requestCeilingChange(adminToken(), 6000);
    const approver = admins[0];
    if (approver === undefined) throw new Error("no second admin");
    const base = `/api/v1/change-requests/${request.id}`;
    await refused(
      "POST",
      `${base}/withdraw`,
      { as: { session: approver.session }, body: { expectedVersion: 1, reason: "not mine" } },
      403,
      "FORBIDDEN",
    );
    await refused(
      "POST",
      `${base}/reject`,
      { as: { session: approver.session }, body: { expectedVersion: 1 } },
      400,
      "VALIDATION_FAILED",
    );
    await refused(
      "POST",
      `${base}/reject`,
      { as: adminToken(), body: { expectedVersion: 1, reason: "tokens never decide" } },
      403,
      "FORBIDDEN",
    );
    const withdrawn = await ok("POST", `${base}/withdraw`, {
      as: adminToken(),
      body: { expectedVersion: 1, reason: "asked too early" },
    });
    expect(withdrawn.body.changeRequest).toMatchObject({ status: "withdrawn", version: 2 });
    const late = await refused(
      "POST",
      `${base}/approve`,
      { as: { session: approver.session }, body: { expectedVersion: 2, reason: "approve it" } },
      409,
      "CONFLICT",
    );
    expect(late.body.error.message).toContain("already withdrawn");
  });

  it("two operators race to approve and reject: exactly one wins each round, the other gets 409", async () => {
    const second = admins[0];
    if (second === undefined) throw new Error("no second admin");
    const third = await addAdmin("third");
    const rounds = 6;
    let approvedCount = 0;
    let rejectedCount = 0;
    for (let round = 0; round < rounds; round++) {
      const request = await requestCeilingChange(adminToken(), 5000 - round * 10);
      const base = `/api/v1/change-requests/${request.id}`;
      // Alternate who approves, so neither side always starts first.
      const [approver, rejecter] = round % 2 === 0 ? [second, third] : [third, second];
      const [approve, reject] = await Promise.all([
        api.call("POST", `${base}/approve`, {
          as: { session: approver.session },
          body: { expectedVersion: 1, reason: "approve it" },
        }),
        api.call("POST", `${base}/reject`, {
          as: { session: rejecter.session },
          body: { expectedVersion: 1, reason: "not this quarter" },
        }),
      ]);
      const statuses = [approve.status, reject.status].sort();
      expect(statuses, `${approve.text}\n${reject.text}`).toEqual([200, 409]);
      const row = await api.db().changeRequest.findUniqueOrThrow({ where: { id: request.id } });
      if (approve.status === 200) {
        approvedCount++;
        expect(row.status).toBe("approved");
        expect(row.appliedAuditEntryId).not.toBeNull();
      } else {
        rejectedCount++;
        expect(row.status).toBe("rejected");
        expect(row.appliedAuditEntryId).toBeNull();
      }
      // Exactly one decision entry per request.
      const decisions = await api.db().auditEntry.count({
        where: {
          entityType: "change-request",
          entityId: request.id,
          action: { in: ["change-request.approve", "change-request.reject"] },
        },
      });
      expect(decisions).toBe(1);
      // A rejected one leaves the settings as they were; an approved one applies it.
      const ceiling = (await ok("GET", "/api/v1/settings", { as: adminToken() })).body.settings
        .ceilings.perCustomer.capacity;
      if (approve.status === 200) expect(ceiling).toBe(5000 - round * 10);
    }
    expect(approvedCount + rejectedCount).toBe(rounds);
  });
});

describe("deletions and imports through a request", () => {
  it("a held-back tier deletion and a large import are requested, then applied by another admin", async () => {
    const approver = admins[0];
    if (approver === undefined) throw new Error("no second admin");
    const approve = async (id: string, expectedVersion: number) =>
      ok("POST", `/api/v1/change-requests/${id}/approve`, {
        as: { session: approver.session },
        body: { expectedVersion, reason: "approve it" },
      });

    const deletion = await ok(
      "POST",
      "/api/v1/change-requests",
      {
        as: adminToken(),
        body: {
          change: {
            kind: "tier.delete",
            name: "trial",
            expectedVersion: await tierVersion("trial"),
          },
          reason: "the trial plan is over",
        },
      },
      201,
    );
    expect(deletion.body.changeRequest.gatedBy).toEqual(['tier "trial" is deleted']);
    expect(deletion.body.changeRequest.diff.after).toBeNull();
    const deleted = await approve(deletion.body.changeRequest.id, 1);
    expect(deleted.body.changeRequest.status).toBe("approved");
    await refused("GET", "/api/v1/tiers/trial", { as: adminToken() }, 404, "NOT_FOUND");

    // An import changing more entries than the setting allows is held back, then requested.
    const current = await ok("GET", "/api/v1/approval-settings", { as: adminToken() });
    await ok("PATCH", "/api/v1/approval-settings", {
      as: adminToken(),
      body: {
        expectedVersion: current.body.settings.version,
        importChangedEntries: 0,
        reason: "every import",
      },
    });
    const exported = await ok("GET", "/api/v1/policy/export", { as: adminToken() });
    const document = JSON.parse(exported.text);
    document.tiers = document.tiers.map(
      (tier: { name: string; displayName: string | null; limit: object }) =>
        tier.name === "free" ? { ...tier, limit: { ...tier.limit, capacity: 41 } } : tier,
    );
    const held = await refused(
      "POST",
      "/api/v1/policy/import?reason=restore",
      { as: adminToken(), body: document },
      409,
      "APPROVAL_REQUIRED",
    );
    expect(held.body.error.details.gatedBy[0]).toMatch(
      /^the import changes \d+ policy entries \(more than 0\)$/,
    );
    const requested = await ok(
      "POST",
      "/api/v1/change-requests",
      {
        as: adminToken(),
        body: { change: { kind: "policy.import", document }, reason: "restore the March backup" },
      },
      201,
    );
    expect(requested.body.changeRequest.diff.after.tiers).toEqual(["enterprise", "free", "pro"]);
    const imported = await approve(requested.body.changeRequest.id, 1);
    expect(imported.body.changeRequest.status).toBe("approved");
    const applied = await api.db().auditEntry.findUniqueOrThrow({
      where: { id: BigInt(imported.body.auditEntryId) },
    });
    expect(applied.action).toBe("policy.import");
    const free = await ok("GET", "/api/v1/tiers/free", { as: adminToken() });
    expect(free.body.tier.limit.capacity).toBe(41);
    await ok("PATCH", "/api/v1/approval-settings", {
      as: adminToken(),
      body: {
        expectedVersion: current.body.settings.version + 1,
        importChangedEntries: 100,
        reason: "back to 100",
      },
    });
  });
});

describe("a dry-run candidate's promotion", () => {
  it("is held back when it lowers the rule too far, and promoted once another admin approves", async () => {
    const approver = admins[0];
    if (approver === undefined) throw new Error("no second admin");
    await ok(
      "POST",
      "/api/v1/candidates",
      {
        as: adminToken(),
        body: { id: "pro-tenth", target: "tier:pro", limit: bucket(16), reason: "try a tenth" },
      },
      201,
    );
    await refused(
      "POST",
      "/api/v1/candidates/pro-tenth/promote",
      { as: adminToken(), body: { expectedVersion: 1, reason: "enforce it" } },
      409,
      "APPROVAL_REQUIRED",
    );
    const requested = await ok(
      "POST",
      "/api/v1/change-requests",
      {
        as: adminToken(),
        body: {
          change: { kind: "candidate.promote", id: "pro-tenth", expectedVersion: 1 },
          reason: "the candidate looked right for a week",
        },
      },
      201,
    );
    const request = requested.body.changeRequest;
    expect(request).toMatchObject({ entityType: "candidate", entityId: "pro-tenth" });
    expect(request.gatedBy).toEqual(['tier "pro"\'s limit is lowered by 90 % (more than 25 %)']);
    expect(request.diff.before.limit.capacity).toBe(160);
    expect(request.diff.after.limit.capacity).toBe(16);
    const approved = await ok("POST", `/api/v1/change-requests/${request.id}/approve`, {
      as: { session: approver.session },
      body: { expectedVersion: 1, reason: "approve it" },
    });
    const applied = await api.db().auditEntry.findUniqueOrThrow({
      where: { id: BigInt(approved.body.auditEntryId) },
    });
    expect(applied).toMatchObject({
      action: "candidate.promote",
      entityType: "tier",
      entityId: "pro",
    });
    const pro = await ok("GET", "/api/v1/tiers/pro", { as: adminToken() });
    expect(pro.body.tier.limit.capacity).toBe(16);
    await refused("GET", "/api/v1/candidates/pro-tenth", { as: adminToken() }, 404, "NOT_FOUND");
  });
});

const ROOT = path.resolve(import.meta.dirname, "../..");

/** Starts `decide-process.ts`; resolves once it is connected, with a function that releases it. */
async function decider(
  verb: "approve" | "reject",
  id: string,
  operator: { id: string; name: string },
) {
  const child = spawn(
    process.execPath,
    [
      "--conditions=react-server",
      "--import",
      "tsx",
      "test/integration/helpers/decide-process.ts",
      api.database().url,
      verb,
      id,
      operator.id,
      operator.name,
    ],
    { cwd: ROOT, env: process.env, stdio: ["pipe", "pipe", "pipe"] },
  );
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = once(child, "exit");
  await waitFor(() => stdout.includes("ready") || child.exitCode !== null, {
    what: `the ${verb} process to connect`,
    timeoutMs: 60_000,
  });
  return {
    release: async (): Promise<{ ok: boolean; status?: number; code?: string }> => {
      child.stdin.end("go\n");
      const [code] = await exited;
      if (code !== 0) throw new Error(`${verb} process exited with ${code}: ${stderr}`);
      const last = stdout.trim().split("\n").at(-1) ?? "";
      return JSON.parse(last) as { ok: boolean; status?: number; code?: string };
    },
  };
}

describe("a race across processes", () => {
  it("approve in one process, reject in another, released together: exactly one wins, the other 409", async () => {
    const second = admins[0];
    const third = admins[1];
    if (second === undefined || third === undefined) throw new Error("the race needs two admins");
    const outcomes: { ok: boolean; status?: number; code?: string }[][] = [];
    for (let round = 0; round < 3; round++) {
      const request = await requestCeilingChange(adminToken(), 4000 - round);
      const [approver, rejecter] = await Promise.all([
        decider("approve", request.id, { id: second.id, name: "Admin second" }),
        decider("reject", request.id, { id: third.id, name: "Admin third" }),
      ]);
      const results = await Promise.all([approver.release(), rejecter.release()]);
      outcomes.push(results);
      expect(results.filter((result) => result.ok)).toHaveLength(1);
      const loser = results.find((result) => !result.ok);
      expect(loser).toMatchObject({ status: 409 });
      const row = await api.db().changeRequest.findUniqueOrThrow({ where: { id: request.id } });
      expect(row.status).toBe(results[0]?.ok === true ? "approved" : "rejected");
      expect(row.version).toBe(2);
    }
    expect(outcomes).toHaveLength(3);
  }, 180_000);
});

describe("hostile input", () => {
  it("names the field and writes nothing", async () => {
    const cases: { body: unknown; path: string }[] = [
      { body: { change: { kind: "tier.explode", name: "pro" }, reason: "r" }, path: "change.kind" },
      {
        body: {
          change: {
            kind: "tier.update",
            name: "pro",
            expectedVersion: 1,
            limit: { ...bucket(10), capacity: -5 },
          },
          reason: "r",
        },
        path: "change.limit.capacity",
      },
      {
        body: { change: { kind: "tier.update", name: "pro", expectedVersion: 1 }, reason: "r" },
        path: "change",
      },
      {
        body: { change: { kind: "tier.delete", name: "../etc", expectedVersion: 1 }, reason: "r" },
        path: "change.name",
      },
      {
        body: {
          change: { kind: "tier.delete", name: "pro", expectedVersion: 1 },
          reason: "\u202e",
        },
        path: "reason",
      },
      {
        body: {
          change: { kind: "tier.delete", name: "pro", expectedVersion: 1 },
          reason: "x".repeat(1001),
        },
        path: "reason",
      },
      {
        body: {
          change: { kind: "tier.delete", name: "pro", expectedVersion: 1 },
          reason: "r",
          extra: 1,
        },
        path: "",
      },
      {
        body: { change: { kind: "policy.import", document: { tiers: "no" } }, reason: "r" },
        path: "change.document",
      },
    ];
    for (const { body, path } of cases) {
      const response = await refused(
        "POST",
        "/api/v1/change-requests",
        { as: adminToken(), body },
        400,
        "VALIDATION_FAILED",
      );
      const paths = response.body.error.fieldErrors.map((error: { path: string }) => error.path);
      expect(
        paths.some((field: string) => field.startsWith(path)),
        `${JSON.stringify(body)}: ${paths}`,
      ).toBe(true);
    }
    await refused(
      "POST",
      "/api/v1/change-requests",
      { as: adminToken(), rawBody: '{"change": ' },
      400,
      "MALFORMED_JSON",
    );
    await refused(
      "POST",
      "/api/v1/change-requests",
      {
        as: { token: api.as("operator").token },
        body: { change: { kind: "tier.delete", name: "pro", expectedVersion: 1 }, reason: "r" },
      },
      403,
      "FORBIDDEN",
    );
    await refused(
      "POST",
      "/api/v1/change-requests",
      { body: { change: { kind: "tier.delete", name: "pro", expectedVersion: 1 }, reason: "r" } },
      401,
      "UNAUTHENTICATED",
    );
    await refused(
      "POST",
      "/api/v1/change-requests",
      {
        as: adminToken(),
        body: {
          change: { kind: "tier.delete", name: "platinum", expectedVersion: 1 },
          reason: "r",
        },
      },
      404,
      "NOT_FOUND",
    );
    await refused(
      "POST",
      "/api/v1/change-requests",
      {
        as: adminToken(),
        body: { change: { kind: "tier.delete", name: "pro", expectedVersion: 999 }, reason: "r" },
      },
      409,
      "VERSION_CONFLICT",
    );
    await refused(
      "GET",
      "/api/v1/change-requests/cr_0000000000000000",
      { as: adminToken() },
      404,
      "NOT_FOUND",
    );
    await refused(
      "GET",
      "/api/v1/change-requests/DROP%20TABLE",
      { as: adminToken() },
      400,
      "VALIDATION_FAILED",
    );
    await refused(
      "POST",
      "/api/v1/change-requests/cr_0000000000000000/approve",
      {
        as: { session: api.as("admin").session },
        body: { expectedVersion: 1, reason: "a\u0000b" },
      },
      400,
      "VALIDATION_FAILED",
    );
    await refused(
      "GET",
      "/api/v1/change-requests?status=maybe",
      { as: adminToken() },
      400,
      "VALIDATION_FAILED",
    );
  });
});

describe("webhook notices", () => {
  const received: unknown[] = [];
  const server = createServer((request: IncomingMessage, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => {
      body += chunk.toString("utf8");
    });
    request.on("end", () => {
      received.push(JSON.parse(body));
      response.writeHead(204).end();
    });
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("go out once per event, through the alert webhook channel", async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    const deps = { db: api.db(), live: null, clock: { nowMs: api.nowMs } };
    await waitFor(
      async () => {
        await deliverAlertWebhooks(deps, { urls: [url] });
        const pending = await api.db().changeRequestEvent.count({ where: { queuedAt: null } });
        const due = await api.db().alertDelivery.count({ where: { status: "pending" } });
        return pending === 0 && due === 0;
      },
      { what: "every change-request notice delivered", timeoutMs: 60_000 },
    );
    const events = await api
      .db()
      .changeRequestEvent.findMany({ select: { event: true, changeRequestId: true } });
    const types = received.map((body) => (body as { event?: { type: string } }).event?.type);
    for (const event of ["requested", "approved", "rejected", "withdrawn", "expired"]) {
      expect(types).toContain(`change-request.${event}`);
    }
    expect(
      received.filter((body) => (body as { event?: unknown }).event !== undefined),
    ).toHaveLength(events.length);
    // Each says the requested change in the audit log's words.
    const summaries = received.map(
      (body) => (body as { event?: { summary?: unknown } }).event?.summary,
    );
    expect(summaries.filter((summary) => typeof summary !== "string")).toEqual(
      received
        .filter((body) => (body as { event?: unknown }).event === undefined)
        .map(() => undefined),
    );
    expect(summaries).toContain("tier trial deleted (was 5/s, bursts of 10)");
    // A second run sends nothing again.
    const before = received.length;
    await deliverAlertWebhooks(deps, { urls: [url] });
    expect(received.length).toBe(before);
  });
});
