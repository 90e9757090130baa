/**
 * Operators and API tokens through the API (admins only): every route's success, bad input, not
 * found and conflict; audited like policy changes; and no response, list or audit entry ever
 * carries a password hash, a token hash or a token after its creation.
 */
import { describe, expect, it } from "vitest";
import { createAdmin } from "../../scripts/admin-create";
import { type ApiResponse, provideApiHarness } from "./helpers/api-harness";
import { uniqueName } from "./helpers/policy-fixtures";

const api = provideApiHarness({ withPolicy: false });
const admin = () => ({ token: api.as("admin").token });

/** No secret of any kind in a response. */
function expectNoSecrets(response: ApiResponse): void {
  expect(response.text).not.toMatch(/passwordHash|tokenHash|scrypt\$|"token":"lp_/);
}

async function newOperator(role = "viewer") {
  const response = await api.call("POST", "/api/v1/operators", {
    as: admin(),
    body: {
      email: `${uniqueName("op")}@limitplane.test`,
      name: "Grace Hopper",
      role,
      reason: "new hire",
    },
  });
  expect(response.status, response.text).toBe(201);
  return response.body;
}

describe("operators", () => {
  it("POST 201: a generated password shown once, stored only hashed, audited without it", async () => {
    const before = await api.fingerprint();
    const email = `${uniqueName("grace")}@Limitplane.test`;
    const response = await api.call("POST", "/api/v1/operators", {
      as: admin(),
      body: { email, name: "Grace Hopper", role: "operator", reason: "joins on-call" },
    });
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({
      operator: { email: email.toLowerCase(), role: "operator", disabledAt: null, version: 1 },
      generatedPassword: expect.stringMatching(/^[A-Za-z0-9_-]{24}$/),
      auditEntryId: expect.any(String),
    });
    expect(response.text).not.toMatch(/passwordHash|scrypt\$/);
    const after = await api.fingerprint();
    expect(after.operators).toBe((before.operators ?? 0) + 1);
    expect(after.audit).toBe((before.audit ?? 0) + 1);
    const entry = await api.db().auditEntry.findFirstOrThrow({
      where: { id: BigInt(response.body.auditEntryId) },
    });
    expect(entry).toMatchObject({
      action: "operator.create",
      entityType: "operator",
      entityId: response.body.operator.id,
      actorType: "token",
      actorId: api.as("admin").tokenId,
      reason: "joins on-call",
    });
    expect(JSON.stringify(entry.after)).not.toMatch(/password|scrypt/);
    expect(JSON.stringify(entry.after)).not.toContain(response.body.generatedPassword);
  });

  it("POST 400 for bad input, 409 for an email taken (any case); nothing written", async () => {
    const existing = await newOperator();
    const before = await api.fingerprint();
    const bad = await api.call("POST", "/api/v1/operators", {
      as: admin(),
      body: { email: "not an email", name: "", role: "root", password: "short", reason: "x" },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.fieldErrors.map((error: { path: string }) => error.path)).toEqual([
      "email",
      "name",
      "role",
      "password",
    ]);
    const taken = await api.call("POST", "/api/v1/operators", {
      as: admin(),
      body: {
        email: existing.operator.email.toUpperCase(),
        name: "Twin",
        role: "viewer",
        reason: "duplicate",
      },
    });
    expect(taken.status).toBe(409);
    expect(taken.body.error.fieldErrors).toEqual([
      { path: "email", message: `${existing.operator.email} is already taken` },
    ]);
    expect(await api.fingerprint()).toEqual(before);
  });

  it("GET list and one: never a hash; 404 for an unknown id, 400 for a malformed one", async () => {
    const { operator } = await newOperator();
    const list = await api.call("GET", "/api/v1/operators", { as: admin() });
    expect(list.status).toBe(200);
    expect(list.body.operators.map((o: { id: string }) => o.id)).toContain(operator.id);
    expectNoSecrets(list);
    const one = await api.call("GET", `/api/v1/operators/${operator.id}`, { as: admin() });
    expect(one.status).toBe(200);
    expect(Object.keys(one.body.operator).sort()).toEqual(
      ["createdAt", "disabledAt", "email", "id", "name", "role", "updatedAt", "version"].sort(),
    );
    expect(
      (await api.call("GET", "/api/v1/operators/op_0000000000000000", { as: admin() })).status,
    ).toBe(404);
    expect((await api.call("GET", "/api/v1/operators/nobody", { as: admin() })).status).toBe(400);
  });

  it("PATCH 200, then 409 VERSION_CONFLICT on the old version, naming who changed it", async () => {
    const { operator } = await newOperator();
    const renamed = await api.call("PATCH", `/api/v1/operators/${operator.id}`, {
      as: admin(),
      body: { expectedVersion: 1, name: "Rear Admiral Hopper", reason: "promotion" },
    });
    expect(renamed.status).toBe(200);
    expect(renamed.body.operator).toMatchObject({ name: "Rear Admiral Hopper", version: 2 });
    const before = await api.fingerprint();
    const stale = await api.call("PATCH", `/api/v1/operators/${operator.id}`, {
      as: admin(),
      body: { expectedVersion: 1, role: "admin", reason: "stale edit" },
    });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe("VERSION_CONFLICT");
    expect(stale.body.error.message).toMatch(/operator\.update by admin token \(token\)/);
    expect(stale.text).not.toMatch(/passwordHash|scrypt\$/);
    expect(await api.fingerprint()).toEqual(before);
  });

  it("disable, enable and password reset: sessions end, audited, and the rules hold", async () => {
    const { operator } = await newOperator("admin");
    const disabled = await api.call("POST", `/api/v1/operators/${operator.id}/disable`, {
      as: admin(),
      body: { expectedVersion: 1, reason: "on leave" },
    });
    expect(disabled.status).toBe(200);
    expect(disabled.body.operator.disabledAt).not.toBeNull();
    const twice = await api.call("POST", `/api/v1/operators/${operator.id}/disable`, {
      as: admin(),
      body: { expectedVersion: 2, reason: "again" },
    });
    expect(twice.status).toBe(409);
    const enabled = await api.call("POST", `/api/v1/operators/${operator.id}/enable`, {
      as: admin(),
      body: { expectedVersion: 2, reason: "back" },
    });
    expect(enabled.status).toBe(200);
    expect(enabled.body.operator).toMatchObject({ disabledAt: null, version: 3 });
    const notDisabled = await api.call("POST", `/api/v1/operators/${operator.id}/enable`, {
      as: admin(),
      body: { expectedVersion: 3, reason: "again" },
    });
    expect(notDisabled.status).toBe(409);
    const reset = await api.call("POST", `/api/v1/operators/${operator.id}/password`, {
      as: admin(),
      body: { expectedVersion: 3, reason: "forgot it" },
    });
    expect(reset.status).toBe(200);
    expect(reset.body.generatedPassword).toMatch(/^[A-Za-z0-9_-]{24}$/);
    const chosen = await api.call("POST", `/api/v1/operators/${operator.id}/password`, {
      as: admin(),
      body: { expectedVersion: 4, password: "chosen by the admin", reason: "set one" },
    });
    expect(chosen.status).toBe(200);
    expect(chosen.body.generatedPassword).toBeNull();
    const actions = await api.db().auditEntry.findMany({
      where: { entityType: "operator", entityId: operator.id },
      orderBy: { id: "asc" },
      select: { action: true, before: true, after: true },
    });
    expect(actions.map((entry) => entry.action)).toEqual([
      "operator.create",
      "operator.disable",
      "operator.enable",
      "operator.password-reset",
      "operator.password-reset",
    ]);
    expect(JSON.stringify(actions)).not.toMatch(/scrypt|passwordHash|chosen by the admin/);
    expect(JSON.stringify(actions)).not.toContain(reset.body.generatedPassword);
  });

  it("404 for unknown operators on every change", async () => {
    const unknown = "op_0000000000000000";
    for (const [method, suffix, body] of [
      ["PATCH", "", { expectedVersion: 1, name: "x", reason: "r" }],
      ["POST", "/disable", { expectedVersion: 1, reason: "r" }],
      ["POST", "/enable", { expectedVersion: 1, reason: "r" }],
      ["POST", "/password", { expectedVersion: 1, reason: "r" }],
    ] as const) {
      const response = await api.call(method, `/api/v1/operators/${unknown}${suffix}`, {
        as: admin(),
        body,
      });
      expect(response.status, `${method} ${suffix}`).toBe(404);
    }
  });

  it("409: an admin cannot disable themselves, and the last enabled admin stays an admin", async () => {
    const self = api.as("admin");
    const version = async (id: string) =>
      (await api.call("GET", `/api/v1/operators/${id}`, { as: admin() })).body.operator.version;
    const selfDisable = await api.call("POST", `/api/v1/operators/${self.operatorId}/disable`, {
      as: { session: self.session },
      body: { expectedVersion: await version(self.operatorId), reason: "oops" },
    });
    expect(selfDisable.status).toBe(409);
    expect(selfDisable.body.error.message).toMatch(/cannot disable yourself/);

    // Every other admin disabled or demoted, the last one cannot be demoted.
    const admins = await api.db().operator.findMany({
      where: { role: "admin", disabledAt: null, id: { not: self.operatorId } },
      select: { id: true, version: true },
    });
    for (const other of admins) {
      const response = await api.call("POST", `/api/v1/operators/${other.id}/disable`, {
        as: admin(),
        body: { expectedVersion: other.version, reason: "cleanup" },
      });
      expect(response.status, response.text).toBe(200);
    }
    const before = await api.fingerprint();
    const demote = await api.call("PATCH", `/api/v1/operators/${self.operatorId}`, {
      as: admin(),
      body: { expectedVersion: await version(self.operatorId), role: "viewer", reason: "oops" },
    });
    expect(demote.status).toBe(409);
    expect(demote.body.error.message).toMatch(/no enabled admin/);
    expect(await api.fingerprint()).toEqual(before);
  });
});

describe("API tokens", () => {
  it("POST 201: the token once; list, get and audit show only name and prefix", async () => {
    const name = uniqueName("ci");
    const created = await api.call("POST", "/api/v1/tokens", {
      as: admin(),
      body: { name, role: "operator", reason: "deploy pipeline" },
    });
    expect(created.status).toBe(201);
    const { token, apiToken } = created.body;
    expect(token).toMatch(/^lp_[a-z0-9]{8}_[A-Za-z0-9_-]{43}$/);
    expect(token.startsWith(`${apiToken.prefix}_`)).toBe(true);
    expect(apiToken).toMatchObject({
      name,
      role: "operator",
      expiresAt: null,
      state: "active",
      createdBy: { id: api.as("admin").tokenId, name: "admin token" },
    });
    expect(created.text).not.toMatch(/tokenHash/);

    const list = await api.call("GET", "/api/v1/tokens", { as: admin() });
    expect(list.status).toBe(200);
    expect(list.body.tokens.find((t: { id: string }) => t.id === apiToken.id)).toMatchObject({
      name,
      prefix: apiToken.prefix,
    });
    const one = await api.call("GET", `/api/v1/tokens/${apiToken.id}`, { as: admin() });
    expect(one.status).toBe(200);
    for (const response of [list, one]) {
      expectNoSecrets(response);
      expect(response.text).not.toContain(token.slice(12));
    }
    const entry = await api.db().auditEntry.findFirstOrThrow({
      where: { id: BigInt(created.body.auditEntryId) },
    });
    expect(entry).toMatchObject({
      action: "token.create",
      entityType: "token",
      entityId: apiToken.id,
    });
    expect(JSON.stringify([entry.before, entry.after])).not.toContain(token.slice(12));
    expect(JSON.stringify(entry.after)).not.toMatch(/tokenHash/);

    // The new token works, with its role.
    expect((await api.call("GET", "/api/v1/tiers", { as: { token } })).status).toBe(200);
    expect((await api.call("GET", "/api/v1/tokens", { as: { token } })).status).toBe(403);
  });

  it("POST 400: bad role, a past or far expiry, unknown fields, control characters; nothing written", async () => {
    const before = await api.fingerprint();
    for (const body of [
      { name: "ci", role: "root", reason: "r" },
      { name: "ci", role: "viewer", expiresAt: "2001-01-01T00:00:00Z", reason: "r" },
      { name: "ci", role: "viewer", expiresAt: "2999-01-01T00:00:00Z", reason: "r" },
      { name: "ci", role: "viewer", reason: "r", scopes: ["all"] },
      { name: "c\u0000i", role: "viewer", reason: "r" },
    ]) {
      const response = await api.call("POST", "/api/v1/tokens", { as: admin(), body });
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.error.fieldErrors.length).toBeGreaterThan(0);
    }
    expect(await api.fingerprint()).toEqual(before);
  });

  it("lists inactive tokens only when asked; revoke is 200, then 409; stale 409; unknown 404", async () => {
    const created = await api.call("POST", "/api/v1/tokens", {
      as: admin(),
      body: { name: uniqueName("old"), role: "viewer", reason: "temporary" },
    });
    const id = created.body.apiToken.id;
    const stale = await api.call("POST", `/api/v1/tokens/${id}/revoke`, {
      as: admin(),
      body: { expectedVersion: 7, reason: "done" },
    });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe("VERSION_CONFLICT");
    const revoked = await api.call("POST", `/api/v1/tokens/${id}/revoke`, {
      as: admin(),
      body: { expectedVersion: 1, reason: "done" },
    });
    expect(revoked.status).toBe(200);
    expect(revoked.body.apiToken).toMatchObject({ state: "revoked", version: 2 });
    const again = await api.call("POST", `/api/v1/tokens/${id}/revoke`, {
      as: admin(),
      body: { expectedVersion: 2, reason: "again" },
    });
    expect(again.status).toBe(409);
    const active = await api.call("GET", "/api/v1/tokens", { as: admin() });
    expect(active.body.tokens.map((t: { id: string }) => t.id)).not.toContain(id);
    const all = await api.call("GET", "/api/v1/tokens?includeInactive=true", { as: admin() });
    expect(all.body.tokens.map((t: { id: string }) => t.id)).toContain(id);
    const badQuery = await api.call("GET", "/api/v1/tokens?includeInactive=yes", { as: admin() });
    expect(badQuery.status).toBe(400);
    expect(badQuery.body.error.fieldErrors[0].path).toBe("query.includeInactive");
    const unknown = await api.call("POST", "/api/v1/tokens/tok_0000000000000000/revoke", {
      as: admin(),
      body: { expectedVersion: 1, reason: "r" },
    });
    expect(unknown.status).toBe(404);
    expect(
      (await api.call("GET", "/api/v1/tokens/tok_0000000000000000", { as: admin() })).status,
    ).toBe(404);
  });
});

describe("npm run admin:create", () => {
  it("refuses while an enabled admin exists, unless forced; the created admin is audited", async () => {
    const email = `${uniqueName("first")}@limitplane.test`;
    const refused = await createAdmin(
      { email, name: "Ada Lovelace", password: null, force: false },
      api.authDeps(),
    );
    expect(refused).toMatchObject({ status: "refused" });
    const created = await createAdmin(
      { email, name: "Ada Lovelace", password: null, force: true },
      api.authDeps(),
    );
    if (created.status !== "created") throw new Error("expected an admin");
    expect(created.operator).toMatchObject({ email, role: "admin" });
    expect(created.generatedPassword).toMatch(/^[A-Za-z0-9_-]{24}$/);
    const entry = await api.db().auditEntry.findFirstOrThrow({
      where: { entityType: "operator", entityId: created.operator.id },
    });
    expect(entry).toMatchObject({
      actorType: "system",
      actorName: "admin:create",
      action: "operator.create",
    });
    const signedIn = await api.call("POST", "/api/v1/auth/sign-in", {
      body: { email, password: created.generatedPassword },
      headers: { "x-forwarded-for": "10.200.0.1" },
    });
    expect(signedIn.status).toBe(200);
  });
});
