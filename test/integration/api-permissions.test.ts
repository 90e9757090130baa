/**
 * The permission matrix, generated from the endpoint registry: every route, called with no
 * credential and as each role, through a session and through an API token. No credential: 401
 * (public routes excepted). A role without the permission: 403. Otherwise neither 401 nor 403.
 * Then the cross-site rule: a session's state-changing request without a same-origin proof is 403
 * CROSS_SITE_REQUEST; an API token's is not.
 */
import { describe, expect, it } from "vitest";
import type { AnyEndpoint } from "@/lib/api/endpoint";
import { ENDPOINTS } from "@/lib/api/endpoints";
import { can, ROLES, type Role } from "@/lib/control/auth/roles";
import { signIn } from "@/lib/control/auth/sign-in";
import { type Credential, provideApiHarness, TEST_PASSWORD } from "./helpers/api-harness";
import { samplePath } from "./helpers/api-samples";

const api = provideApiHarness();

type Expected = 401 | 403 | "allowed";

function expected(endpoint: AnyEndpoint, kind: "session" | "token", role: Role | null): Expected {
  if (endpoint.access === "public") return "allowed";
  if (role === null) return 401;
  if (endpoint.access === "authenticated") return "allowed";
  if (endpoint.access === "session") return kind === "session" ? "allowed" : 403;
  return can(role, endpoint.access) ? "allowed" : 403;
}

const isSignOut = (endpoint: AnyEndpoint) => endpoint.path === "/api/v1/auth/sign-out";

/** A session of `role` to spend (signing out ends it). */
async function throwawaySession(role: Role): Promise<string> {
  const result = await signIn(
    { email: `${role}@limitplane.test`, password: TEST_PASSWORD, address: null, userAgent: null },
    api.authDeps(),
  );
  return result.sessionToken;
}

function describeCall(endpoint: AnyEndpoint, who: string): string {
  return `${endpoint.method} ${endpoint.path} as ${who}`;
}

const hasBody = (endpoint: AnyEndpoint) => endpoint.body !== undefined;

describe("the permission matrix", () => {
  it("covers every route of the registry", () => {
    expect(ENDPOINTS.length).toBeGreaterThan(50);
  });

  for (const endpoint of ENDPOINTS) {
    it(`${endpoint.method} ${endpoint.path} (${endpoint.access})`, async () => {
      const spare = new Map<Role, string>();
      if (isSignOut(endpoint)) {
        for (const role of ROLES) spare.set(role, await throwawaySession(role));
      }
      const before = await api.fingerprint();
      const path = samplePath(endpoint, api);
      const body = hasBody(endpoint) ? {} : undefined;
      const cases: { who: string; as: Credential; want: Expected }[] = [
        { who: "nobody", as: null, want: expected(endpoint, "token", null) },
      ];
      for (const role of ROLES) {
        cases.push({
          who: `${role} (token)`,
          as: { token: api.as(role).token },
          want: expected(endpoint, "token", role),
        });
        cases.push({
          who: `${role} (session)`,
          as: { session: spare.get(role) ?? api.as(role).session },
          want: expected(endpoint, "session", role),
        });
      }
      for (const { who, as, want } of cases) {
        const response = await api.call(endpoint.method, path, { as, body });
        const label = describeCall(endpoint, who);
        if (want === "allowed") {
          expect([401, 403], `${label}: ${response.text}`).not.toContain(response.status);
          expect(response.status, `${label}: ${response.text}`).toBeLessThan(500);
        } else {
          expect(response.status, `${label}: ${response.text}`).toBe(want);
          expect(response.body.error.code).toBe(want === 401 ? "UNAUTHENTICATED" : "FORBIDDEN");
          if (want === 401) expect(response.headers.get("www-authenticate")).toContain("Bearer");
        }
      }
      if (!isSignOut(endpoint)) expect(await api.fingerprint()).toEqual(before);
    });
  }
});

const sessionMutations = ENDPOINTS.filter(
  (endpoint) => endpoint.method !== "GET" && endpoint.access !== "public",
);

describe("cross-site requests", () => {
  it.each(
    sessionMutations.map((endpoint) => [`${endpoint.method} ${endpoint.path}`, endpoint] as const),
  )(
    "%s with a session and no Origin: 403 CROSS_SITE_REQUEST; with another site's Origin: the same",
    async (_label, endpoint) => {
      const before = await api.fingerprint();
      const session = isSignOut(endpoint)
        ? await throwawaySession("admin")
        : api.as("admin").session;
      const afterSpare = await api.fingerprint();
      for (const origin of ["none", "https://evil.example"]) {
        const response = await api.call(endpoint.method, samplePath(endpoint, api), {
          as: { session },
          body: hasBody(endpoint) ? {} : undefined,
          origin,
        });
        expect(response.status, response.text).toBe(403);
        expect(response.body.error.code).toBe("CROSS_SITE_REQUEST");
      }
      expect(await api.fingerprint()).toEqual(isSignOut(endpoint) ? afterSpare : before);
    },
  );

  it("a session passes with Sec-Fetch-Site: same-origin and no Origin", async () => {
    const response = await api.call("POST", "/api/v1/tiers", {
      as: { session: api.as("admin").session },
      body: {},
      origin: "none",
      headers: { "sec-fetch-site": "same-origin" },
    });
    expect(response.status).toBe(400);
  });

  it.each(
    sessionMutations.map((endpoint) => [`${endpoint.method} ${endpoint.path}`, endpoint] as const),
  )("%s with an API token and no Origin is not refused as cross-site", async (_label, endpoint) => {
    const response = await api.call(endpoint.method, samplePath(endpoint, api), {
      as: { token: api.as("admin").token },
      body: hasBody(endpoint) ? {} : undefined,
      origin: "https://evil.example",
    });
    expect(response.body?.error?.code, response.text).not.toBe("CROSS_SITE_REQUEST");
  });

  it("sign-in from another site is refused; from a script (no Origin) it is not", async () => {
    const body = { email: "admin@limitplane.test", password: "wrong password" };
    const crossSite = await api.call("POST", "/api/v1/auth/sign-in", {
      body,
      origin: "https://evil.example",
    });
    expect(crossSite.status).toBe(403);
    expect(crossSite.body.error.code).toBe("CROSS_SITE_REQUEST");
    const script = await api.call("POST", "/api/v1/auth/sign-in", { body });
    expect(script.status).toBe(401);
  });
});
