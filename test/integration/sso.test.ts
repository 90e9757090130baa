/**
 * Single sign-on against a real OpenID Connect provider (`oidc-provider` over https, in this
 * process: test/support/oidc-provider.ts), through the console's own flow (PKCE, state, nonce,
 * openid-client): accounts made and linked from claims, roles from a group claim and demoted when
 * the group goes, a tampered state or nonce refused, and password sign-in turned off with a
 * break-glass admin.
 */
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import { request as httpsRequest } from "node:https";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authenticateSessionToken } from "@/lib/control/auth/authenticate";
import { revokeSession } from "@/lib/control/auth/revoke-session";
import { signIn } from "@/lib/control/auth/sign-in";
import {
  cookieValue,
  openFlowState,
  SSO_FLOW_COOKIE,
  sealFlowState,
} from "@/lib/control/auth/sso-flow-state";
import type { SsoSettings } from "@/lib/control/auth/sso-settings";
import { AppError } from "@/lib/control/errors";
import { createOperator } from "@/lib/control/operator/create-operator";
import {
  acceptBackchannelLogout,
  finishSsoSignIn,
  providerSignOutUrl,
  SSO_BACKCHANNEL_LOGOUT_PATH,
  SSO_CALLBACK_PATH,
  SSO_POST_LOGOUT_PATH,
  type SsoRedirect,
  ssoRechecker,
  startSsoSignIn,
} from "@/lib/server/sso/oidc-flow";
import { startTestOidcProvider, type TestOidcProvider } from "../support/oidc-provider";
import { ORIGIN, provideApiHarness, TEST_PASSWORD } from "./helpers/api-harness";
import { uniqueName } from "./helpers/policy-fixtures";

const api = provideApiHarness({ withPolicy: false });
const SECRET = "sso-test-session-secret-0123456789abcdef";
const RECHECK_MS = 5 * 60_000;
let provider: TestOidcProvider;
let settings: SsoSettings;

/** What the provider posted to the console's back-channel logout endpoint, and the answers. */
const logoutAnswers: { ok: boolean; sessionsEnded?: number }[] = [];
let logoutReceiver: Server;

beforeAll(async () => {
  // The console's back-channel logout endpoint, as the provider reaches it over the network.
  logoutReceiver = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on("end", () => {
      void acceptBackchannelLogout({
        settings,
        logoutToken: new URLSearchParams(body).get("logout_token"),
        deps: api.authDeps(),
        requestId: "req_logout_test",
      }).then((answer) => {
        logoutAnswers.push(answer);
        response.writeHead(answer.ok ? 200 : 400).end();
      });
    });
  });
  logoutReceiver.listen(0, "127.0.0.1");
  await once(logoutReceiver, "listening");
  const { port } = logoutReceiver.address() as AddressInfo;
  provider = await startTestOidcProvider({
    redirectUris: [`${ORIGIN}${SSO_CALLBACK_PATH}`],
    backchannelLogoutUri: `http://127.0.0.1:${port}${SSO_BACKCHANNEL_LOGOUT_PATH}`,
    postLogoutRedirectUris: [`${ORIGIN}${SSO_POST_LOGOUT_PATH}`],
  });
  settings = {
    issuer: provider.issuer,
    clientId: provider.clientId,
    clientSecret: provider.clientSecret,
    roleClaim: "groups",
    roleGrants: [
      { value: "lp-admins", role: "admin" },
      { value: "lp-operators", role: "operator" },
      { value: "staff", role: "viewer" },
    ],
    displayName: "Test IdP",
    caPem: provider.caPem,
    recheckIntervalMs: RECHECK_MS,
    onProviderOutage: "end-session",
  };
}, 30_000);

afterAll(async () => {
  await provider?.stop();
  logoutReceiver?.close();
});

interface Reply {
  readonly status: number;
  readonly location: string | null;
  readonly setCookies: readonly string[];
  readonly body: string;
}

/** A browser's request to the provider (which only this test's CA vouches for). */
function providerRequest(url: string, cookies: Map<string, string>, form?: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {
      cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join("; "),
    };
    if (form !== undefined) headers["content-type"] = "application/x-www-form-urlencoded";
    const outgoing = httpsRequest(
      url,
      { method: form === undefined ? "GET" : "POST", headers, ca: provider.caPem },
      (incoming) => {
        let body = "";
        incoming.on("data", (chunk: Buffer) => {
          body += chunk.toString();
        });
        incoming.on("end", () => {
          const setCookies = incoming.headers["set-cookie"] ?? [];
          for (const cookie of setCookies) {
            const [pair = ""] = cookie.split(";");
            const separator = pair.indexOf("=");
            cookies.set(pair.slice(0, separator), pair.slice(separator + 1));
          }
          const location = incoming.headers.location ?? null;
          resolve({
            status: incoming.statusCode ?? 0,
            location: location === null ? null : new URL(location, url).href,
            setCookies,
            body,
          });
        });
      },
    );
    outgoing.on("error", reject);
    outgoing.end(form);
  });
}

/**
 * A browser at the provider: follows its redirects, fills its login form as `login`, and stops
 * at the redirect back to the console. Returns that URL.
 */
async function signInAtProvider(
  authorizationUrl: string,
  login: string,
  cookies = new Map<string, string>(),
): Promise<URL> {
  let url = authorizationUrl;
  for (let step = 0; step < 10; step++) {
    if (url.startsWith(ORIGIN)) return new URL(url);
    const reply = await providerRequest(url, cookies);
    if (reply.location !== null) {
      url = reply.location;
      continue;
    }
    const action = /<form[^>]*action="([^"]+)"/.exec(reply.body)?.[1];
    if (action === undefined) throw new Error(`no form at ${url}: ${reply.body.slice(0, 300)}`);
    const target = new URL(action.replaceAll("&amp;", "&"), url).href;
    const isLogin = reply.body.includes('name="login"');
    const form = isLogin
      ? new URLSearchParams({ prompt: "login", login, password: "any" }).toString()
      : new URLSearchParams({ prompt: "consent" }).toString();
    const posted = await providerRequest(target, cookies, form);
    if (posted.location === null) throw new Error(`no redirect after the form: ${posted.body}`);
    url = posted.location;
  }
  throw new Error("the provider never sent the browser back");
}

function flowOptions() {
  return { settings, secret: SECRET, origin: ORIGIN, isSecureCookie: false, nowMs: api.nowMs() };
}

function flowCookieOf(redirect: SsoRedirect): string {
  const value = cookieValue(redirect.setCookies[0]?.split(";")[0] ?? null, SSO_FLOW_COOKIE);
  if (value === null) throw new Error("no flow cookie");
  return value;
}

async function finish(callbackUrl: URL, flowCookie: string) {
  let sessionToken: string | null = null;
  const answer = await finishSsoSignIn({
    ...flowOptions(),
    callbackUrl,
    cookieHeader: `${SSO_FLOW_COOKIE}=${flowCookie}`,
    client: { address: "10.9.8.7", userAgent: "sso-test" },
    deps: api.authDeps(),
    requestId: "req_sso_test",
    sessionCookie: (result) => {
      sessionToken = result.sessionToken;
      return `lp_session=${result.sessionToken}`;
    },
  });
  return { answer, sessionToken: sessionToken as string | null };
}

/** The whole sign-in, as a browser does it: console, provider, console. */
async function ssoSignIn(login: string, next = "/customers", cookies = new Map<string, string>()) {
  const start = await startSsoSignIn({ ...flowOptions(), next });
  const callbackUrl = await signInAtProvider(start.location, login, cookies);
  return finish(callbackUrl, flowCookieOf(start));
}

async function roleOfSession(token: string | null) {
  if (token === null) return null;
  return (await authenticateSessionToken(token, api.authDeps()))?.role ?? null;
}

function auditActions(operatorId: string) {
  return api
    .db()
    .auditEntry.findMany({
      where: { entityType: "operator", entityId: operatorId },
      orderBy: { id: "asc" },
      select: { action: true, actorId: true },
    })
    .then((rows) => rows.map((row) => row.action));
}

describe("SSO sign-in against a real OpenID Connect provider", () => {
  it("the authorization request carries PKCE (S256), a state and a nonce, and the cookie seals them", async () => {
    const start = await startSsoSignIn({ ...flowOptions(), next: "/incidents" });
    const url = new URL(start.location);
    expect(url.origin).toBe(provider.issuer);
    expect(url.searchParams.get("code_challenge_method")).toBe("S256");
    expect(url.searchParams.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const flow = openFlowState(flowCookieOf(start), SECRET, Date.now());
    expect(flow?.state).toBe(url.searchParams.get("state"));
    expect(flow?.nonce).toBe(url.searchParams.get("nonce"));
    expect(flow?.next).toBe("/incidents");
    expect(start.setCookies[0]).toMatch(/HttpOnly; SameSite=Lax$/);
  });

  it("a new identity signs in with the role of its group; the account is made and audited", async () => {
    const login = uniqueName("ada");
    provider.accounts.set(login, {
      email: `${login}@corp.test`,
      email_verified: true,
      name: "Ada From Corp",
      groups: ["staff", "lp-operators"],
    });
    const { answer, sessionToken } = await ssoSignIn(login, "/customers");
    expect(answer.location).toBe("/customers");
    expect(await roleOfSession(sessionToken)).toBe("operator");
    const operator = await api.db().operator.findUniqueOrThrow({
      where: { email: `${login}@corp.test` },
      select: { id: true, name: true, role: true, ssoIssuer: true, ssoSubject: true },
    });
    expect(operator).toMatchObject({
      name: "Ada From Corp",
      role: "operator",
      ssoIssuer: provider.issuer,
      ssoSubject: login,
    });
    expect(await auditActions(operator.id)).toEqual(["operator.sso-create"]);
    // The account has no password that works.
    await expect(
      signIn(
        { email: `${login}@corp.test`, password: "!sso", address: "10.1.2.3" },
        api.authDeps(),
      ),
    ).rejects.toMatchObject({ code: "UNAUTHENTICATED" });
  }, 30_000);

  it("a group removed at the provider demotes at the next sign-in; no group left refuses", async () => {
    const login = uniqueName("bob");
    const account = {
      email: `${login}@corp.test`,
      email_verified: true,
      name: "Bob",
      groups: ["lp-admins", "staff"],
    };
    provider.accounts.set(login, account);
    const first = await ssoSignIn(login);
    expect(await roleOfSession(first.sessionToken)).toBe("admin");

    account.groups = ["staff"];
    const second = await ssoSignIn(login);
    expect(await roleOfSession(second.sessionToken)).toBe("viewer");
    // The session from before the change reads the operator's role on every request.
    expect(await roleOfSession(first.sessionToken)).toBe("viewer");

    account.groups = ["contractors"];
    const third = await ssoSignIn(login);
    expect(third.answer.location).toBe("/sign-in?sso=no-role");
    expect(third.sessionToken).toBeNull();

    const { id } = await api.db().operator.findUniqueOrThrow({
      where: { email: account.email },
      select: { id: true },
    });
    expect(await auditActions(id)).toEqual(["operator.sso-create", "operator.sso-update"]);
  }, 30_000);

  it("a state that is not the one sent is refused, and no session is made", async () => {
    const login = uniqueName("eve");
    provider.accounts.set(login, {
      email: `${login}@corp.test`,
      email_verified: true,
      name: "Eve",
      groups: ["lp-admins"],
    });
    const start = await startSsoSignIn({ ...flowOptions(), next: "/" });
    const callbackUrl = await signInAtProvider(start.location, login);
    callbackUrl.searchParams.set("state", "an-attackers-state");
    const before = await api.db().session.count();
    const { answer, sessionToken } = await finish(callbackUrl, flowCookieOf(start));
    expect(answer.location).toBe("/sign-in?sso=check-failed");
    expect(sessionToken).toBeNull();
    expect(await api.db().session.count()).toBe(before);
    expect(await api.db().operator.count({ where: { email: `${login}@corp.test` } })).toBe(0);
  }, 30_000);

  it("an ID token whose nonce is not the flow's is refused", async () => {
    const login = uniqueName("mallory");
    provider.accounts.set(login, {
      email: `${login}@corp.test`,
      email_verified: true,
      name: "Mallory",
      groups: ["lp-admins"],
    });
    const start = await startSsoSignIn({ ...flowOptions(), next: "/" });
    const callbackUrl = await signInAtProvider(start.location, login);
    const flow = openFlowState(flowCookieOf(start), SECRET, Date.now());
    if (flow === null) throw new Error("no flow");
    const otherNonce = sealFlowState({ ...flow, nonce: "another-flows-nonce" }, SECRET);
    const { answer, sessionToken } = await finish(callbackUrl, otherNonce);
    expect(answer.location).toBe("/sign-in?sso=check-failed");
    expect(sessionToken).toBeNull();
  }, 30_000);

  it("a callback without the flow's cookie, or with an altered one, is refused", async () => {
    const start = await startSsoSignIn({ ...flowOptions(), next: "/" });
    const callbackUrl = new URL(`${ORIGIN}${SSO_CALLBACK_PATH}?code=abc&state=def`);
    const altered = `${flowCookieOf(start).slice(0, -2)}AA`;
    for (const cookie of ["", altered]) {
      const { answer } = await finish(callbackUrl, cookie);
      expect(answer.location).toBe("/sign-in?sso=expired");
    }
  });

  it("a password account with the same verified email is linked (audited); an unverified one is not", async () => {
    const email = `${uniqueName("owner")}@corp.test`;
    const { operator } = await createOperator(
      { email, name: "Local Owner", role: "admin", password: TEST_PASSWORD },
      { actor: { type: "system", id: null, name: "test" }, reason: "test" },
      api.authDeps(),
    );
    const unverified = uniqueName("unverified");
    provider.accounts.set(unverified, {
      email,
      email_verified: false,
      name: "Someone",
      groups: ["lp-admins"],
    });
    const refused = await ssoSignIn(unverified);
    expect(refused.answer.location).toBe("/sign-in?sso=not-linked");

    const verified = uniqueName("verified");
    provider.accounts.set(verified, {
      email,
      email_verified: true,
      name: "Local Owner",
      groups: ["lp-admins"],
    });
    const linked = await ssoSignIn(verified);
    expect(await roleOfSession(linked.sessionToken)).toBe("admin");
    expect(await auditActions(operator.id)).toEqual(["operator.create", "operator.sso-link"]);
    // The owner's password still works while password sign-in is on.
    const byPassword = await signIn(
      { email, password: TEST_PASSWORD, address: "10.4.5.6" },
      api.authDeps(),
    );
    expect(byPassword.operator.id).toBe(operator.id);
  }, 30_000);
});

describe("the provider's logout", () => {
  it("signing out at the provider ends the operator's sessions here (back-channel logout)", async () => {
    const login = uniqueName("leaver");
    provider.accounts.set(login, {
      email: `${login}@corp.test`,
      email_verified: true,
      name: "Leaver",
      groups: ["staff"],
    });
    const browser = new Map<string, string>();
    const { sessionToken } = await ssoSignIn(login, "/", browser);
    expect(await roleOfSession(sessionToken)).toBe("viewer");

    const form = await providerRequest(`${provider.issuer}/session/end`, browser);
    const action = /<form[^>]*action="([^"]+)"/.exec(form.body)?.[1];
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(form.body)?.[1];
    if (action === undefined || xsrf === undefined) throw new Error(`no logout form: ${form.body}`);
    const before = logoutAnswers.length;
    await providerRequest(
      new URL(action, provider.issuer).href,
      browser,
      new URLSearchParams({ xsrf, logout: "yes" }).toString(),
    );
    // The provider has posted the logout token by the time it answers the browser.
    expect(logoutAnswers.slice(before)).toEqual([{ ok: true, sessionsEnded: 1 }]);
    expect(await roleOfSession(sessionToken)).toBeNull();
  }, 30_000);

  it("refuses a logout token that is missing, forged or not the provider's", async () => {
    const forged = [
      null,
      "not-a-jwt",
      // Signed with "none": a token anyone could write.
      `${Buffer.from('{"alg":"none"}').toString("base64url")}.${Buffer.from(
        JSON.stringify({
          iss: provider.issuer,
          aud: provider.clientId,
          sub: "anyone",
          iat: Math.floor(Date.now() / 1000),
          events: { "http://schemas.openid.net/event/backchannel-logout": {} },
        }),
      ).toString("base64url")}.`,
    ];
    for (const logoutToken of forged) {
      const answer = await acceptBackchannelLogout({
        settings,
        logoutToken,
        deps: api.authDeps(),
        requestId: "req_forged_logout",
      });
      expect(answer).toEqual({ ok: false });
    }
  });
});

describe("password sign-in turned off", () => {
  it("refuses passwords but for a break-glass admin, whose sign-in is audited", async () => {
    const system = { actor: { type: "system" as const, id: null, name: "test" }, reason: "test" };
    const adminEmail = `${uniqueName("glass")}@corp.test`;
    const viewerEmail = `${uniqueName("viewer")}@corp.test`;
    const { operator: admin } = await createOperator(
      { email: adminEmail, name: "Glass Admin", role: "admin", password: TEST_PASSWORD },
      system,
      api.authDeps(),
    );
    await createOperator(
      { email: viewerEmail, name: "Viewer", role: "viewer", password: TEST_PASSWORD },
      system,
      api.authDeps(),
    );
    const deps = {
      ...api.authDeps(),
      passwordSignIn: { isEnabled: false, breakGlassEmails: [adminEmail] },
    };
    const refused = await signIn(
      { email: viewerEmail, password: TEST_PASSWORD, address: "10.7.7.7" },
      deps,
    ).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AppError);
    expect(refused).toMatchObject({ code: "FORBIDDEN", details: { passwordSignIn: "off" } });

    const glass = await signIn(
      { email: adminEmail, password: TEST_PASSWORD, address: "10.7.7.8" },
      deps,
    );
    expect(glass.operator.id).toBe(admin.id);
    expect(await auditActions(admin.id)).toEqual([
      "operator.create",
      "operator.break-glass-sign-in",
    ]);
    // A wrong password stays wrong, and writes nothing.
    await expect(
      signIn({ email: adminEmail, password: "not the password", address: "10.7.7.9" }, deps),
    ).rejects.toMatchObject({ code: "UNAUTHENTICATED" });
    expect(await auditActions(admin.id)).toHaveLength(2);
  });
});

describe("the role re-checked at the provider while signed in", () => {
  /** Authentication as the console does it with SSO configured: due sessions are re-checked. */
  function rechecking(rechecker = ssoRechecker(settings, SECRET)) {
    return { ...api.authDeps(), ssoRecheck: rechecker };
  }

  /** Runs `act` and expects `dueAtMs` to be `afterMs` past the clock's reading during it. */
  async function expectDueAfter(afterMs: number, act: () => Promise<unknown>, operatorId: string) {
    const fromMs = api.nowMs();
    await act();
    const toMs = api.nowMs();
    const dueAtMs = (await sessionRow(operatorId)).ssoCheckDueAt?.getTime() ?? 0;
    expect(dueAtMs).toBeGreaterThanOrEqual(fromMs + afterMs);
    expect(dueAtMs).toBeLessThanOrEqual(toMs + afterMs);
  }

  async function signedInAs(groups: string[]) {
    const login = uniqueName("recheck");
    const account = { email: `${login}@corp.test`, email_verified: true, name: "Re Check", groups };
    provider.accounts.set(login, account);
    const { sessionToken } = await ssoSignIn(login);
    if (sessionToken === null) throw new Error("the sign-in made no session");
    const { id } = await api.db().operator.findUniqueOrThrow({
      where: { email: account.email },
      select: { id: true },
    });
    return { login, account, sessionToken, operatorId: id };
  }

  function sessionRow(operatorId: string) {
    return api.db().session.findFirstOrThrow({
      where: { operatorId },
      select: { ssoTokens: true, ssoCheckDueAt: true, revokedAt: true },
    });
  }

  async function auditOf(operatorId: string) {
    return api.db().auditEntry.findMany({
      where: { entityType: "operator", entityId: operatorId },
      orderBy: { id: "asc" },
      select: { action: true, actorName: true, reason: true, before: true, after: true },
    });
  }

  it("a group removed at the provider demotes a signed-in operator at the next re-check (audited); no group left ends the session", async () => {
    const { account, sessionToken, operatorId } = await signedInAs(["lp-admins"]);
    const deps = rechecking();
    const before = await sessionRow(operatorId);
    expect(before.ssoTokens).toMatch(/^v1\./);
    expect(before.ssoCheckDueAt?.getTime()).toBeLessThanOrEqual(api.nowMs() + RECHECK_MS);

    account.groups = ["staff"];
    // Not yet due: the role last confirmed holds, and the provider is not asked.
    expect((await authenticateSessionToken(sessionToken, deps))?.role).toBe("admin");
    api.advanceClock(RECHECK_MS);
    await expectDueAfter(
      RECHECK_MS,
      async () => {
        expect((await authenticateSessionToken(sessionToken, deps))?.role).toBe("viewer");
      },
      operatorId,
    );
    const after = await sessionRow(operatorId);
    expect(after.ssoTokens).not.toBe(before.ssoTokens);
    const entries = await auditOf(operatorId);
    expect(entries.map((entry) => entry.action)).toEqual([
      "operator.sso-create",
      "operator.sso-update",
    ]);
    expect(entries[1]).toMatchObject({
      actorName: "identity provider re-check",
      before: { role: "admin" },
      after: { role: "viewer" },
    });

    account.groups = ["contractors"];
    api.advanceClock(RECHECK_MS);
    expect(await authenticateSessionToken(sessionToken, deps)).toBeNull();
    expect((await sessionRow(operatorId)).revokedAt).not.toBeNull();
    expect((await auditOf(operatorId)).map((entry) => entry.action)).toEqual([
      "operator.sso-create",
      "operator.sso-update",
      "operator.sso-session-end",
    ]);
  }, 30_000);

  it("a grant revoked at the provider ends the session at the next re-check, audited with the provider's reason", async () => {
    const { login, sessionToken, operatorId } = await signedInAs(["lp-operators"]);
    const deps = rechecking();
    expect(await provider.revokeGrants(login)).toBeGreaterThan(0);
    expect((await authenticateSessionToken(sessionToken, deps))?.role).toBe("operator");
    api.advanceClock(RECHECK_MS);
    expect(await authenticateSessionToken(sessionToken, deps)).toBeNull();
    const ended = (await auditOf(operatorId)).at(-1);
    expect(ended).toMatchObject({
      action: "operator.sso-session-end",
      actorName: "identity provider re-check",
    });
    expect(ended?.reason).toMatch(/^The identity provider refused: invalid_grant/);
    // Ended stays ended, with no re-check left to run.
    expect(await authenticateSessionToken(sessionToken, deps)).toBeNull();
  }, 30_000);

  it("an unreachable provider keeps the role confirmed last, then ends the session after two intervals", async () => {
    const { sessionToken, operatorId } = await signedInAs(["lp-operators"]);
    const down = { ...settings, issuer: "https://127.0.0.1:9" };
    const ending = rechecking(ssoRechecker(down, SECRET));
    const keeping = rechecking(ssoRechecker({ ...down, onProviderOutage: "keep-session" }, SECRET));
    api.advanceClock(RECHECK_MS);
    // The failed check is retried a minute later, not on every request.
    await expectDueAfter(
      60_000,
      async () => {
        expect((await authenticateSessionToken(sessionToken, ending))?.role).toBe("operator");
      },
      operatorId,
    );
    api.advanceClock(RECHECK_MS);
    expect((await authenticateSessionToken(sessionToken, keeping))?.role).toBe("operator");
    api.advanceClock(60_000);
    expect(await authenticateSessionToken(sessionToken, ending)).toBeNull();
    const ended = (await auditOf(operatorId)).at(-1);
    expect(ended?.action).toBe("operator.sso-session-end");
    expect(ended?.reason).toMatch(/could not be reached to confirm the role for \d+ minutes/);
  }, 30_000);

  it("a session whose stored tokens were altered ends at its re-check; a password session is never re-checked", async () => {
    const { sessionToken, operatorId } = await signedInAs(["staff"]);
    const deps = rechecking();
    await api.db().session.updateMany({
      where: { operatorId },
      data: { ssoTokens: "v1.AAAA.BBBB.CCCC" },
    });
    api.advanceClock(RECHECK_MS);
    expect(await authenticateSessionToken(sessionToken, deps)).toBeNull();
    expect((await auditOf(operatorId)).at(-1)?.reason).toContain("missing or altered");

    const password = await signIn(
      { email: "viewer@limitplane.test", password: TEST_PASSWORD, address: "10.6.6.6" },
      api.authDeps(),
    );
    api.advanceClock(RECHECK_MS);
    expect((await authenticateSessionToken(password.sessionToken, deps))?.role).toBe("viewer");
  }, 30_000);

  it("concurrent requests due a re-check are all answered, and the demotion is audited once", async () => {
    const { account, sessionToken, operatorId } = await signedInAs(["lp-admins"]);
    const deps = rechecking();
    account.groups = ["lp-operators"];
    api.advanceClock(RECHECK_MS);
    const roles = await Promise.all(
      Array.from({ length: 8 }, () => authenticateSessionToken(sessionToken, deps)),
    );
    expect(roles.every((principal) => principal !== null)).toBe(true);
    expect(roles.filter((principal) => principal?.role === "operator").length).toBeGreaterThan(0);
    expect((await auditOf(operatorId)).map((entry) => entry.action)).toEqual([
      "operator.sso-create",
      "operator.sso-update",
    ]);
    expect((await authenticateSessionToken(sessionToken, deps))?.role).toBe("operator");
  }, 30_000);
});

describe("signing out at the provider too (RP-initiated logout)", () => {
  it("an SSO session's sign-out sends the browser to the provider's end-session endpoint, which signs out there and comes back", async () => {
    const login = uniqueName("signout");
    provider.accounts.set(login, {
      email: `${login}@corp.test`,
      email_verified: true,
      name: "Signs Out",
      groups: ["staff"],
    });
    const browser = new Map<string, string>();
    const { sessionToken } = await ssoSignIn(login, "/", browser);
    const principal = await authenticateSessionToken(sessionToken ?? "", api.authDeps());
    if (principal?.kind !== "operator") throw new Error("not signed in");
    const { ssoTokens } = await revokeSession(
      { operatorId: principal.id, sessionId: principal.sessionId },
      api.authDeps(),
    );
    // The tokens are forgotten with the session.
    const row = await api.db().session.findUniqueOrThrow({
      where: { id: principal.sessionId },
      select: { ssoTokens: true },
    });
    expect(row.ssoTokens).toBeNull();
    const url = await providerSignOutUrl({
      settings,
      sealedTokens: ssoTokens,
      secret: SECRET,
      origin: ORIGIN,
    });
    if (url === null) throw new Error("no sign-out URL");
    const endSession = new URL(url);
    expect(endSession.origin).toBe(provider.issuer);
    expect(endSession.searchParams.get("post_logout_redirect_uri")).toBe(
      `${ORIGIN}${SSO_POST_LOGOUT_PATH}`,
    );
    expect(endSession.searchParams.get("id_token_hint")).toMatch(/^ey[\w-]+\.[\w-]+\.[\w-]+$/);

    const form = await providerRequest(url, browser);
    const action = /<form[^>]*action="([^"]+)"/.exec(form.body)?.[1];
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(form.body)?.[1];
    if (action === undefined || xsrf === undefined) throw new Error(`no logout form: ${form.body}`);
    const confirmed = await providerRequest(
      new URL(action, provider.issuer).href,
      browser,
      new URLSearchParams({ xsrf, logout: "yes" }).toString(),
    );
    expect(confirmed.location).toBe(`${ORIGIN}${SSO_POST_LOGOUT_PATH}`);
    // Signed out there: the next sign-in asks for the login again.
    const start = await startSsoSignIn({ ...flowOptions(), next: "/" });
    const again = await providerRequest(start.location, browser);
    const interaction =
      again.location === null ? again : await providerRequest(again.location, browser);
    expect(interaction.body).toContain('name="login"');
  }, 30_000);

  it("no sign-out URL for a password session, altered tokens, or another secret", async () => {
    const login = uniqueName("signout2");
    provider.accounts.set(login, {
      email: `${login}@corp.test`,
      email_verified: true,
      name: "Signs Out Too",
      groups: ["staff"],
    });
    const { sessionToken } = await ssoSignIn(login);
    const session = await api.db().session.findFirstOrThrow({
      where: { tokenHash: { not: "" }, operator: { email: `${login}@corp.test` } },
      select: { ssoTokens: true },
    });
    expect(sessionToken).not.toBeNull();
    for (const [sealedTokens, secret] of [
      [null, SECRET],
      ["v1.AAAA.BBBB.CCCC", SECRET],
      [session.ssoTokens, "another-secret-0123456789abcdef0123456789"],
    ] as const) {
      expect(
        await providerSignOutUrl({ settings, sealedTokens, secret, origin: ORIGIN }),
      ).toBeNull();
    }
  }, 30_000);
});
