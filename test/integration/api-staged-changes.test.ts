/**
 * Staged changes through the API: start (201, 400, 401, 403, 409), read (200, 404), and each verb
 * (200, 403, 404, 409), with nothing written by a refused call and the audit entry of each change.
 */
import { describe, expect, it } from "vitest";
import { type CallOptions, provideApiHarness } from "./helpers/api-harness";
import { uniqueName } from "./helpers/policy-fixtures";

const api = provideApiHarness();
const admin = () => ({ token: api.as("admin").token });
const operator = () => ({ token: api.as("operator").token });
const steps = [
  { percent: 5, dwellMs: 60_000 },
  { percent: 25, dwellMs: 60_000 },
  { percent: 100, dwellMs: 60_000 },
];
const stricterFree = { algorithm: "token-bucket", capacity: 15, refillPerSec: 5 };

async function refused(method: string, path: string, options: CallOptions, status: number) {
  const before = await api.fingerprint();
  const response = await api.call(method, path, options);
  expect(response.status, response.text).toBe(status);
  expect(await api.fingerprint()).toEqual(before);
  return response;
}

describe("staged changes", () => {
  it("start 201 as an admin session; the audit entry, the candidate's slice and the version say so", async () => {
    const id = uniqueName("api-staged");
    const response = await api.call("POST", "/api/v1/staged-changes", {
      as: { session: api.as("admin").session },
      body: {
        id,
        target: "tier:free",
        limit: stricterFree,
        steps,
        reason: "halve free, carefully",
      },
    });
    expect(response.status, response.text).toBe(201);
    expect(response.body.stagedChange).toMatchObject({
      id,
      state: "running",
      stepIndex: 0,
      sliceBasisPoints: 500,
      steps: steps.map((step) => ({ sliceBasisPoints: step.percent * 100, dwellMs: 60_000 })),
      guard: { marginPercent: 5, minRequests: 100, windowMs: 60_000, consecutiveWindows: 3 },
      previousLimit: { algorithm: "token-bucket", capacity: 20, refillPerSec: 10 },
      version: 1,
    });
    const entry = await api.db().auditEntry.findFirstOrThrow({
      where: { id: BigInt(response.body.auditEntryId) },
    });
    expect(entry).toMatchObject({
      action: "staged-change.start",
      entityType: "staged-change",
      entityId: id,
      policyVersion: response.body.policyVersion,
    });
    const candidate = await api.db().dryRunCandidate.findUniqueOrThrow({ where: { id } });
    expect(candidate.sliceBasisPoints).toBe(500);

    // A second staged change of the same rule is refused while this one runs.
    await refused(
      "POST",
      "/api/v1/staged-changes",
      {
        as: admin(),
        body: { target: "tier:free", limit: stricterFree, steps, reason: "again" },
      },
      409,
    );

    const got = await api.call("GET", `/api/v1/staged-changes/${id}`, { as: operator() });
    expect(got.body.stagedChange.id).toBe(id);
    const listed = await api.call("GET", "/api/v1/staged-changes", { as: operator() });
    expect(listed.body.stagedChanges.map((change: { id: string }) => change.id)).toContain(id);

    // An operator may pause and abort, not advance; each verb carries the version.
    await refused(
      "POST",
      `/api/v1/staged-changes/${id}/advance`,
      { as: operator(), body: { expectedVersion: 1, reason: "go" } },
      403,
    );
    const paused = await api.call("POST", `/api/v1/staged-changes/${id}/pause`, {
      as: operator(),
      body: { expectedVersion: 1, reason: "hold on" },
    });
    expect(paused.status, paused.text).toBe(200);
    expect(paused.body).toMatchObject({ stagedChange: { state: "paused" }, policyVersion: null });
    await refused(
      "POST",
      `/api/v1/staged-changes/${id}/pause`,
      { as: operator(), body: { expectedVersion: 2, reason: "again" } },
      409,
    );
    const advanced = await api.call("POST", `/api/v1/staged-changes/${id}/advance`, {
      as: admin(),
      body: { expectedVersion: 2, reason: "next" },
    });
    expect(advanced.status, advanced.text).toBe(200);
    expect(advanced.body.stagedChange).toMatchObject({ stepIndex: 1, sliceBasisPoints: 2500 });
    await refused(
      "POST",
      `/api/v1/staged-changes/${id}/complete`,
      { as: admin(), body: { expectedVersion: 3, reason: "done" } },
      409,
    );
    const aborted = await api.call("POST", `/api/v1/staged-changes/${id}/abort`, {
      as: operator(),
      body: { expectedVersion: 3, reason: "stop" },
    });
    expect(aborted.status, aborted.text).toBe(200);
    expect(aborted.body.stagedChange).toMatchObject({ state: "aborted" });
    expect(await api.db().dryRunCandidate.findUnique({ where: { id } })).toBeNull();
  });

  it("a staged change that reaches 100 % completes into the tier, audited", async () => {
    const id = uniqueName("api-complete");
    const tier = uniqueName("tier");
    const created = await api.call("POST", "/api/v1/tiers", {
      as: admin(),
      body: {
        name: tier,
        displayName: "Staged",
        limit: { algorithm: "token-bucket", capacity: 50, refillPerSec: 5 },
        reason: "a tier to stage",
      },
    });
    expect(created.status, created.text).toBe(201);
    const started = await api.call("POST", "/api/v1/staged-changes", {
      as: admin(),
      body: {
        id,
        target: `tier:${tier}`,
        limit: { algorithm: "token-bucket", capacity: 30, refillPerSec: 5 },
        steps: [{ percent: 100, dwellMs: 1000 }],
        reason: "one step",
      },
    });
    expect(started.status, started.text).toBe(201);
    const completed = await api.call("POST", `/api/v1/staged-changes/${id}/complete`, {
      as: admin(),
      body: { expectedVersion: 1, reason: "done" },
    });
    expect(completed.status, completed.text).toBe(200);
    expect(completed.body.stagedChange.state).toBe("completed");
    const got = await api.call("GET", `/api/v1/tiers/${tier}`, { as: admin() });
    expect(got.body.tier.limit).toMatchObject({ capacity: 30, refillPerSec: 5, mode: "enforce" });
    const entry = await api.db().auditEntry.findFirstOrThrow({
      where: { id: BigInt(completed.body.auditEntryId) },
    });
    expect(entry.action).toBe("staged-change.complete");
  });

  it("start 400 names each bad field, writing nothing", async () => {
    for (const [body, path] of [
      [
        { target: "tier:free", limit: stricterFree, steps: [{ percent: 50, dwellMs: 1000 }] },
        "steps[0].percent",
      ],
      [
        { target: "tier:free", limit: stricterFree, steps: [{ percent: 100, dwellMs: 10 }] },
        "steps[0].dwellMs",
      ],
      [{ target: "tier:free", steps }, "limit"],
      [{ target: "customer:acme", limit: stricterFree, steps }, "target"],
      [
        { target: "tier:free", limit: stricterFree, steps, guard: { windowMs: 10 } },
        "guard.windowMs",
      ],
    ] as const) {
      const response = await refused(
        "POST",
        "/api/v1/staged-changes",
        { as: admin(), body: { ...body, reason: "bad" } },
        400,
      );
      expect(
        response.body.error.fieldErrors.map((error: { path: string }) => error.path),
        JSON.stringify(body),
      ).toContain(path);
    }
  });

  it("401 without credentials, 403 for an operator, 404 for an unknown id", async () => {
    await refused(
      "POST",
      "/api/v1/staged-changes",
      { as: null, body: { target: "tier:free", limit: stricterFree, steps, reason: "x" } },
      401,
    );
    await refused(
      "POST",
      "/api/v1/staged-changes",
      { as: operator(), body: { target: "tier:free", limit: stricterFree, steps, reason: "x" } },
      403,
    );
    await refused("GET", "/api/v1/staged-changes/nope", { as: operator() }, 404);
    await refused(
      "POST",
      "/api/v1/staged-changes/nope/abort",
      { as: operator(), body: { expectedVersion: 1, reason: "x" } },
      404,
    );
  });
});
