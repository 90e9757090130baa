/**
 * Signing in and out through the API: the cookie, wrong passwords, brute force reaching 429,
 * expired, idle and revoked sessions, revoked and expired tokens, one's own sessions and password.
 */

import { sha256Hex } from "@limitplane/enforcer/policy";
import { describe, expect, it } from "vitest";
import { verifyPassword } from "@/lib/control/auth/password";
import { signIn } from "@/lib/control/auth/sign-in";
import { createOperator } from "@/lib/control/operator/create-operator";
import { createApiToken } from "@/lib/control/token/create-api-token";
import { provideApiHarness, TEST_PASSWORD } from "./helpers/api-harness";
import { uniqueName } from "./helpers/policy-fixtures";

const api = provideApiHarness({ withPolicy: false });
const system = { actor: { type: "system" as const, id: null, name: "test" }, reason: "test" };
const HOUR_MS = 3_600_000;

/** A new operator of its own, so limits and sessions of one test touch no other. */
async function newOperator(role: "viewer" | "operator" | "admin" = "viewer") {
  const email = `${uniqueName("op")}@limitplane.test`;
  const { operator } = await createOperator(
    { email, name: "Test Person", role, password: TEST_PASSWORD },
    system,
    api.authDeps(),
  );
  return { email, operator };
}

/** A client address of its own, so the per-address limit of one test touches no other. */
function newAddress(): string {
  return `10.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
}

function signInCall(body: unknown, address = newAddress(), headers: Record<string, string> = {}) {
  return api.call("POST", "/api/v1/auth/sign-in", {
    body,
    headers: { "x-forwarded-for": address, ...headers },
  });
}

function cookieValue(setCookie: string | null): string {
  const match = /^lp_session=([^;]*)/.exec(setCookie ?? "");
  if (match?.[1] === undefined) throw new Error(`no session cookie in ${setCookie}`);
  return match[1];
}

describe("POST /api/v1/auth/sign-in", () => {
  it("200: sets an httpOnly, SameSite=Lax session cookie and stores only its hash", async () => {
    const { email, operator } = await newOperator();
    const response = await signInCall({ email: email.toUpperCase(), password: TEST_PASSWORD });
    expect(response.status).toBe(200);
    const setCookie = response.headers.get("set-cookie");
    expect(setCookie).toMatch(
      /^lp_session=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=43200; HttpOnly; SameSite=Lax; Secure$/,
    );
    expect(response.body).toEqual({
      operator: expect.objectContaining({ id: operator.id, email, role: "viewer" }),
      session: expect.objectContaining({ operatorId: operator.id, userAgent: "limitplane-tests" }),
    });
    expect(response.text).not.toMatch(/passwordHash|tokenHash|scrypt\$|sessionToken/);
    const token = cookieValue(setCookie);
    expect(response.text).not.toContain(token);
    const stored = await api.db().session.findUniqueOrThrow({
      where: { id: response.body.session.id },
      select: { tokenHash: true },
    });
    expect(stored.tokenHash).toBe(sha256Hex(token));

    const me = await api.call("GET", "/api/v1/auth/me", { as: { session: token } });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ kind: "operator", operator: { id: operator.id } });
    expect(me.body.permissions).toEqual(["policy.read", "audit.read", "metrics.read"]);
  });

  it("the cookie is not Secure for plain http to localhost (local development)", async () => {
    const { email } = await newOperator();
    const response = await signInCall({ email, password: TEST_PASSWORD }, newAddress(), {
      host: "localhost:3000",
      "x-forwarded-proto": "http",
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("set-cookie")).not.toContain("Secure");
  });

  it("401: a wrong password and an unknown email get the same answer, and no session", async () => {
    const { email } = await newOperator();
    const before = await api.fingerprint();
    const wrong = await signInCall({ email, password: "not the password" });
    const unknown = await signInCall({ email: "nobody@limitplane.test", password: TEST_PASSWORD });
    for (const response of [wrong, unknown]) {
      expect(response.status).toBe(401);
      expect(response.body.error).toMatchObject({
        code: "UNAUTHENTICATED",
        message: "The email or password is wrong.",
      });
      expect(response.headers.get("set-cookie")).toBeNull();
    }
    expect(await api.fingerprint()).toEqual(before);
  });

  it("403: a disabled operator, told only after the right password", async () => {
    const { email, operator } = await newOperator();
    await api.db().operator.update({
      where: { id: operator.id },
      data: { disabledAt: new Date() },
    });
    const response = await signInCall({ email, password: TEST_PASSWORD });
    expect(response.status).toBe(403);
    expect(response.body.error.message).toMatch(/disabled/);
    expect((await signInCall({ email, password: "wrong wrong wrong" })).status).toBe(401);
  });

  it("400: a body that is not credentials names the fields; unknown fields are refused", async () => {
    const response = await signInCall({ email: 12, password: "", remember: true });
    expect(response.status).toBe(400);
    expect(response.body.error.fieldErrors).toEqual([
      { path: "email", message: "email must be text" },
      { path: "password", message: "password is required" },
      { path: "remember", message: expect.stringMatching(/^unknown field "remember"/) },
    ]);
  });

  it("429: five wrong passwords for one account from one address, then refused with Retry-After, even with the right password", async () => {
    const { email } = await newOperator();
    const address = newAddress();
    for (let attempt = 0; attempt < 5; attempt++) {
      const response = await signInCall({ email, password: `guess number ${attempt}` }, address);
      expect(response.status).toBe(401);
    }
    const limited = await signInCall({ email, password: TEST_PASSWORD }, address);
    expect(limited.status).toBe(429);
    expect(limited.body.error).toMatchObject({
      code: "RATE_LIMITED",
      message: expect.stringMatching(
        /^Too many failed sign-ins for this account from your address\. Wait \d+ s/,
      ),
      details: { limitedBy: "pair" },
    });
    const retryAfter = Number(limited.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(30);
    expect(limited.headers.get("set-cookie")).toBeNull();
  });

  it("200: an attacker's 100 wrong guesses from 50 addresses do not stop the owner's correct sign-in from a fresh address", async () => {
    const { email } = await newOperator();
    const statuses: number[] = [];
    for (let guess = 0; guess < 100; guess++) {
      const address = `198.18.${guess % 50}.${1 + (guess % 50)}`;
      statuses.push((await signInCall({ email, password: `guess ${guess}` }, address)).status);
    }
    // Each address gets its guesses until the account's 10 failures are spent, then only an
    // address that has not failed for it may try: 50 first guesses, 50 refusals.
    expect(statuses.filter((status) => status === 401)).toHaveLength(50);
    expect(statuses.filter((status) => status === 429)).toHaveLength(50);
    expect((await signInCall({ email, password: TEST_PASSWORD })).status).toBe(200);
  });

  it("429: twenty attempts from one address across accounts, then refused with Retry-After", async () => {
    const address = newAddress();
    for (let attempt = 0; attempt < 20; attempt++) {
      const response = await signInCall(
        { email: `guess${attempt}@limitplane.test`, password: "password guess" },
        address,
      );
      expect(response.status).toBe(401);
    }
    const { email } = await newOperator();
    const limited = await signInCall({ email, password: TEST_PASSWORD }, address);
    expect(limited.status).toBe(429);
    expect(limited.body.error.details).toMatchObject({ limitedBy: "address" });
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    // Another address is not limited by it.
    expect((await signInCall({ email, password: TEST_PASSWORD })).status).toBe(200);
  });
});

describe("sessions", () => {
  async function session(email: string): Promise<string> {
    const result = await signIn(
      { email, password: TEST_PASSWORD, address: null, userAgent: null },
      api.authDeps(),
    );
    return result.sessionToken;
  }

  it("401 once the absolute lifetime (12 h) is over, however active the session", async () => {
    const { email } = await newOperator();
    const token = await session(email);
    for (let hour = 0; hour < 12; hour++) {
      expect((await api.call("GET", "/api/v1/auth/me", { as: { session: token } })).status).toBe(
        200,
      );
      api.advanceClock(HOUR_MS - 1_000);
    }
    api.advanceClock(13_000);
    const expired = await api.call("GET", "/api/v1/auth/me", { as: { session: token } });
    expect(expired.status).toBe(401);
    expect(expired.body.error.code).toBe("UNAUTHENTICATED");
  });

  it("401 once unused for the idle limit (2 h); last seen is written at most once a minute", async () => {
    const { email } = await newOperator();
    const token = await session(email);
    const row = () =>
      api.db().session.findUniqueOrThrow({
        where: { tokenHash: sha256Hex(token) },
        select: { lastSeenAt: true },
      });
    const first = (await row()).lastSeenAt;
    api.advanceClock(30_000);
    await api.call("GET", "/api/v1/auth/me", { as: { session: token } });
    expect((await row()).lastSeenAt).toEqual(first);
    api.advanceClock(31_000);
    await api.call("GET", "/api/v1/auth/me", { as: { session: token } });
    expect((await row()).lastSeenAt.getTime()).toBeGreaterThan(first.getTime());
    api.advanceClock(2 * HOUR_MS + 1_000);
    expect((await api.call("GET", "/api/v1/auth/me", { as: { session: token } })).status).toBe(401);
  });

  it("sign-out: 200, the cookie cleared, the session refused afterwards", async () => {
    const { email } = await newOperator();
    const token = await session(email);
    const response = await api.call("POST", "/api/v1/auth/sign-out", { as: { session: token } });
    expect(response.status).toBe(200);
    // A password session has nothing to sign out of at a provider.
    expect(response.body).toEqual({ providerSignOutUrl: null });
    expect(response.headers.get("set-cookie")).toMatch(
      /^lp_session=; Path=\/; Max-Age=0; HttpOnly/,
    );
    expect((await api.call("GET", "/api/v1/auth/me", { as: { session: token } })).status).toBe(401);
    expect(
      (await api.call("POST", "/api/v1/auth/sign-out", { as: { session: token } })).status,
    ).toBe(401);
  });

  it("lists one's own live sessions and revokes another of them; someone else's is 404", async () => {
    const { email } = await newOperator();
    const current = await session(email);
    const other = await session(email);
    const list = await api.call("GET", "/api/v1/auth/sessions", { as: { session: current } });
    expect(list.status).toBe(200);
    expect(list.body.sessions).toHaveLength(2);
    expect(list.text).not.toMatch(/tokenHash/);
    const otherId = list.body.sessions.find(
      (candidate: { id: string }) => candidate.id !== list.body.currentSessionId,
    ).id;

    const someoneElses = await api.call(
      "DELETE",
      `/api/v1/auth/sessions/${api.as("admin").sessionId}`,
      {
        as: { session: current },
      },
    );
    expect(someoneElses.status).toBe(404);

    const revoked = await api.call("DELETE", `/api/v1/auth/sessions/${otherId}`, {
      as: { session: current },
    });
    expect(revoked.status).toBe(200);
    expect(revoked.headers.get("set-cookie")).toBeNull();
    expect((await api.call("GET", "/api/v1/auth/me", { as: { session: other } })).status).toBe(401);
    expect((await api.call("GET", "/api/v1/auth/me", { as: { session: current } })).status).toBe(
      200,
    );
    const again = await api.call("DELETE", `/api/v1/auth/sessions/${otherId}`, {
      as: { session: current },
    });
    expect(again.status).toBe(404);
    const bad = await api.call("DELETE", "/api/v1/auth/sessions/not-a-session", {
      as: { session: current },
    });
    expect(bad.status).toBe(400);
  });

  it("a cookie that is not a session, or a forged one, is 401", async () => {
    for (const token of ["x", "A".repeat(43), `${"b".repeat(42)}!`]) {
      const response = await api.call("GET", "/api/v1/auth/me", { as: { session: token } });
      expect(response.status).toBe(401);
    }
  });
});

describe("POST /api/v1/auth/password", () => {
  it("changes one's own password: other sessions end, this one stays, audited without secrets", async () => {
    const { email, operator } = await newOperator();
    const current = await signIn(
      { email, password: TEST_PASSWORD, address: null, userAgent: null },
      api.authDeps(),
    );
    const other = await signIn(
      { email, password: TEST_PASSWORD, address: null, userAgent: null },
      api.authDeps(),
    );
    const wrong = await api.call("POST", "/api/v1/auth/password", {
      as: { session: current.sessionToken },
      body: { currentPassword: "not it at all", newPassword: "a brand new passphrase" },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.fieldErrors).toEqual([
      { path: "currentPassword", message: "the current password is wrong" },
    ]);
    const short = await api.call("POST", "/api/v1/auth/password", {
      as: { session: current.sessionToken },
      body: { currentPassword: TEST_PASSWORD, newPassword: "short" },
    });
    expect(short.status).toBe(400);
    expect(short.body.error.fieldErrors[0].path).toBe("newPassword");

    const changed = await api.call("POST", "/api/v1/auth/password", {
      as: { session: current.sessionToken },
      body: { currentPassword: TEST_PASSWORD, newPassword: "a brand new passphrase" },
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ sessionsRevoked: 1, operator: { version: 2 } });
    expect(
      (await api.call("GET", "/api/v1/auth/me", { as: { session: other.sessionToken } })).status,
    ).toBe(401);
    expect(
      (await api.call("GET", "/api/v1/auth/me", { as: { session: current.sessionToken } })).status,
    ).toBe(200);
    const entry = await api.db().auditEntry.findFirstOrThrow({
      where: { entityType: "operator", entityId: operator.id, action: "operator.password-reset" },
    });
    expect(entry).toMatchObject({ actorType: "operator", actorId: operator.id });
    expect(JSON.stringify([entry.before, entry.after])).not.toMatch(
      /scrypt|passwordHash|passphrase/,
    );
    const { passwordHash } = await api.db().operator.findUniqueOrThrow({
      where: { id: operator.id },
      select: { passwordHash: true },
    });
    expect(await verifyPassword("a brand new passphrase", passwordHash)).toBe(true);
    expect(await verifyPassword(TEST_PASSWORD, passwordHash)).toBe(false);
  });

  it("200: a password change after an attacker's failed guesses succeeds", async () => {
    const { email } = await newOperator();
    const current = await signIn(
      { email, password: TEST_PASSWORD, address: null, userAgent: null },
      api.authDeps(),
    );
    for (let guess = 0; guess < 20; guess++) {
      const address = `198.19.${guess}.${guess + 1}`;
      expect((await signInCall({ email, password: `guess ${guess}` }, address)).status).toBe(401);
    }
    const changed = await api.call("POST", "/api/v1/auth/password", {
      as: { session: current.sessionToken },
      body: { currentPassword: TEST_PASSWORD, newPassword: "another brand new passphrase" },
    });
    expect(changed.status).toBe(200);
  });
});

describe("API tokens as credentials", () => {
  async function token(expiresAt?: string) {
    return createApiToken(
      { name: uniqueName("script"), role: "viewer", expiresAt },
      system,
      api.authDeps(),
    );
  }

  it("200 while active; lastUsedAt written at most once a minute", async () => {
    const { token: secret, apiToken } = await token();
    const me = await api.call("GET", "/api/v1/auth/me", { as: { token: secret } });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({
      kind: "token",
      apiToken: { id: apiToken.id, state: "active" },
    });
    expect(me.text).not.toContain(secret.slice(12));
    const lastUsed = async () =>
      (await api.db().apiToken.findUniqueOrThrow({ where: { id: apiToken.id } })).lastUsedAt;
    const first = await lastUsed();
    expect(first).not.toBeNull();
    await api.call("GET", "/api/v1/auth/me", { as: { token: secret } });
    expect(await lastUsed()).toEqual(first);
  });

  it("401 once revoked", async () => {
    const { token: secret, apiToken } = await token();
    const revoke = await api.call("POST", `/api/v1/tokens/${apiToken.id}/revoke`, {
      as: { token: api.as("admin").token },
      body: { expectedVersion: 1, reason: "leaked in a build log" },
    });
    expect(revoke.status).toBe(200);
    const refused = await api.call("GET", "/api/v1/auth/me", { as: { token: secret } });
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe("UNAUTHENTICATED");
  });

  it("401 once expired", async () => {
    const { token: secret } = await token(new Date(api.nowMs() + HOUR_MS).toISOString());
    expect((await api.call("GET", "/api/v1/auth/me", { as: { token: secret } })).status).toBe(200);
    api.advanceClock(HOUR_MS + 1_000);
    expect((await api.call("GET", "/api/v1/auth/me", { as: { token: secret } })).status).toBe(401);
  });

  it("401 for a malformed Authorization header or a token that is not ours, even with a valid cookie", async () => {
    for (const authorization of [
      "Basic YWRtaW46YWRtaW4=",
      "Bearer",
      "Bearer lp_short",
      `Bearer lp_abcdefgh_${"x".repeat(43)}`,
    ]) {
      const response = await api.call("GET", "/api/v1/auth/me", {
        as: { session: api.as("viewer").session },
        headers: { authorization },
      });
      expect(response.status, authorization).toBe(401);
    }
  });
});

describe("changes to an operator apply to their very next request", () => {
  it("a role change, and a disable that ends their sessions", async () => {
    const { email, operator } = await newOperator("viewer");
    const token = (
      await signIn(
        { email, password: TEST_PASSWORD, address: null, userAgent: null },
        api.authDeps(),
      )
    ).sessionToken;
    const admin = { token: api.as("admin").token };
    const listOperators = () => api.call("GET", "/api/v1/operators", { as: { session: token } });
    expect((await listOperators()).status).toBe(403);
    const promoted = await api.call("PATCH", `/api/v1/operators/${operator.id}`, {
      as: admin,
      body: { expectedVersion: 1, role: "admin", reason: "joins the platform team" },
    });
    expect(promoted.status).toBe(200);
    expect((await listOperators()).status).toBe(200);
    const disabled = await api.call("POST", `/api/v1/operators/${operator.id}/disable`, {
      as: admin,
      body: { expectedVersion: 2, reason: "left the company" },
    });
    expect(disabled.status).toBe(200);
    expect(disabled.body.sessionsRevoked).toBe(1);
    expect((await listOperators()).status).toBe(401);
  });
});
