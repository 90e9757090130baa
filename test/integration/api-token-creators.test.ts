/**
 * A token answers to its creator (issue 14, item 1): it stops working the moment the operator who
 * made it is disabled, never carries more than that operator's current role, follows a token
 * that made it, and a creator removed from the database takes its tokens along. Tokens made from
 * the command line have no creator: listed as `cli`, they keep their role and can be revoked.
 * Every refusal leaves the database as it was.
 */
import { describe, expect, it } from "vitest";
import { type Credential, provideApiHarness } from "./helpers/api-harness";
import { uniqueName } from "./helpers/policy-fixtures";

const api = provideApiHarness({ withPolicy: true });
const adminA = () => ({ session: api.as("admin").session });

/** A new admin, signed in through the API: their session and the version of their row. */
async function newSignedInAdmin(): Promise<{ id: string; session: Credential; version: number }> {
  const email = `${uniqueName("admin-b")}@limitplane.test`;
  const created = await api.call("POST", "/api/v1/operators", {
    as: adminA(),
    body: { email, name: "Admin B", role: "admin", reason: "second admin" },
  });
  expect(created.status, created.text).toBe(201);
  const signedIn = await api.call("POST", "/api/v1/auth/sign-in", {
    body: { email, password: created.body.generatedPassword },
    headers: { "x-forwarded-for": "10.77.0.1" },
  });
  expect(signedIn.status, signedIn.text).toBe(200);
  const cookie = /^lp_session=([^;]*)/.exec(signedIn.headers.get("set-cookie") ?? "")?.[1];
  if (cookie === undefined) throw new Error("no session cookie");
  return { id: created.body.operator.id, session: { session: cookie }, version: 1 };
}

async function createToken(as: Credential, role: string, name = uniqueName("tok")) {
  const response = await api.call("POST", "/api/v1/tokens", {
    as,
    body: { name, role, reason: "automation" },
  });
  expect(response.status, response.text).toBe(201);
  return { token: { token: response.body.token as string }, id: response.body.apiToken.id };
}

async function operatorAction(id: string, action: string, body: Record<string, unknown>) {
  const response = await api.call("POST", `/api/v1/operators/${id}/${action}`, {
    as: adminA(),
    body: { reason: "test", ...body },
  });
  expect(response.status, response.text).toBe(200);
  return response.body.operator.version as number;
}

async function tokenRecord(id: string) {
  const response = await api.call("GET", `/api/v1/tokens/${id}`, { as: adminA() });
  expect(response.status).toBe(200);
  return response.body.apiToken;
}

describe("a token and its creator", () => {
  it("stops the moment its creator is disabled: 401 on reads and writes, nothing written", async () => {
    const b = await newSignedInAdmin();
    const { token, id } = await createToken(b.session, "admin");
    expect((await api.call("GET", "/api/v1/operators", { as: token })).status).toBe(200);
    expect(await tokenRecord(id)).toMatchObject({
      role: "admin",
      effectiveRole: "admin",
      state: "active",
      createdBy: { kind: "operator", id: b.id, name: "Admin B" },
    });

    const version = await operatorAction(b.id, "disable", { expectedVersion: b.version });
    const before = await api.fingerprint();
    const read = await api.call("GET", "/api/v1/operators", { as: token });
    expect(read.status).toBe(401);
    expect(read.body.error).toMatchObject({
      code: "UNAUTHENTICATED",
      requestId: expect.any(String),
    });
    const write = await api.call("POST", "/api/v1/operators", {
      as: token,
      body: {
        email: `${uniqueName("mallory")}@limitplane.test`,
        name: "Mallory",
        role: "admin",
        reason: "persistence",
      },
    });
    expect(write.status).toBe(401);
    expect(write.body.error.code).toBe("UNAUTHENTICATED");
    expect(await api.fingerprint()).toEqual(before);
    expect(await tokenRecord(id)).toMatchObject({ state: "suspended", effectiveRole: null });
    const listed = await api.call("GET", "/api/v1/tokens", { as: adminA() });
    expect(listed.body.tokens).toContainEqual(
      expect.objectContaining({ id, state: "suspended", effectiveRole: null }),
    );

    // Re-enabled, the operator's tokens work again (revoke them if the account was compromised).
    await operatorAction(b.id, "enable", { expectedVersion: version });
    expect((await api.call("GET", "/api/v1/operators", { as: token })).status).toBe(200);
  });

  it("never carries more than its creator's current role: demoting the creator caps it", async () => {
    const b = await newSignedInAdmin();
    const { token, id } = await createToken(b.session, "admin");
    const demoted = await api.call("PATCH", `/api/v1/operators/${b.id}`, {
      as: adminA(),
      body: { expectedVersion: b.version, role: "viewer", reason: "moved teams" },
    });
    expect(demoted.status, demoted.text).toBe(200);
    const before = await api.fingerprint();
    const refused = await api.call("POST", "/api/v1/tiers", {
      as: token,
      body: {
        name: uniqueName("t"),
        limit: { algorithm: "token-bucket", capacity: 10, refillPerSec: 1 },
        reason: "should not happen",
      },
    });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({
      code: "FORBIDDEN",
      details: { permission: "tier.write", role: "viewer" },
    });
    expect((await api.call("GET", "/api/v1/operators", { as: token })).status).toBe(403);
    expect(await api.fingerprint()).toEqual(before);
    expect((await api.call("GET", "/api/v1/tiers", { as: token })).status).toBe(200);
    const me = await api.call("GET", "/api/v1/auth/me", { as: token });
    expect(me.body).toMatchObject({
      kind: "token",
      permissions: ["policy.read", "audit.read", "metrics.read"],
      apiToken: { id, role: "admin", effectiveRole: "viewer", state: "active" },
    });
  });

  it("a token made by a token answers to it, and through it to the operator", async () => {
    const b = await newSignedInAdmin();
    const parent = await createToken(b.session, "admin");
    const child = await createToken(parent.token, "operator");
    expect(await tokenRecord(child.id)).toMatchObject({
      createdBy: { kind: "token", id: parent.id },
      effectiveRole: "operator",
    });
    const version = await operatorAction(b.id, "disable", { expectedVersion: b.version });
    expect((await api.call("GET", "/api/v1/tiers", { as: child.token })).status).toBe(401);
    await operatorAction(b.id, "enable", { expectedVersion: version });
    expect((await api.call("GET", "/api/v1/tiers", { as: child.token })).status).toBe(200);
    const parentRecord = await tokenRecord(parent.id);
    const revoked = await api.call("POST", `/api/v1/tokens/${parent.id}/revoke`, {
      as: adminA(),
      body: { expectedVersion: parentRecord.version, reason: "rotated" },
    });
    expect(revoked.status).toBe(200);
    expect((await api.call("GET", "/api/v1/tiers", { as: child.token })).status).toBe(401);
    expect(await tokenRecord(child.id)).toMatchObject({ state: "suspended", effectiveRole: null });
  });

  it("an operator removed from the database takes their tokens along", async () => {
    const b = await newSignedInAdmin();
    const { token, id } = await createToken(b.session, "operator");
    // No route deletes an operator (they are disabled); this is a row removed by hand.
    await api.db().session.deleteMany({ where: { operatorId: b.id } });
    await api.db().operator.delete({ where: { id: b.id } });
    expect((await api.call("GET", "/api/v1/tiers", { as: token })).status).toBe(401);
    expect(await tokenRecord(id)).toMatchObject({
      state: "suspended",
      createdBy: { kind: "operator", id: b.id, name: "Admin B" },
    });
  });

  it("a token made from the command line keeps its role, is listed as cli, and can be revoked", async () => {
    // The harness made its tokens as the command line does: a system actor, no creator.
    const cli = api.as("admin");
    const record = await tokenRecord(cli.tokenId);
    expect(record).toMatchObject({
      role: "admin",
      effectiveRole: "admin",
      state: "active",
      createdBy: { kind: "cli", id: null },
    });
    const viewerToken = api.as("viewer");
    const viewerRecord = await tokenRecord(viewerToken.tokenId);
    expect(viewerRecord.createdBy.kind).toBe("cli");
    const revoked = await api.call("POST", `/api/v1/tokens/${viewerToken.tokenId}/revoke`, {
      as: adminA(),
      body: { expectedVersion: viewerRecord.version, reason: "not needed" },
    });
    expect(revoked.status).toBe(200);
    expect(revoked.body.apiToken).toMatchObject({ state: "revoked", effectiveRole: null });
    expect(
      (await api.call("GET", "/api/v1/tiers", { as: { token: viewerToken.token } })).status,
    ).toBe(401);
  });
});
