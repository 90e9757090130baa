/**
 * Signing in and out, who am I, one's own password and sessions. Sign-in is public (rate limited
 * per address and per account, refused from another site); the rest concern the caller.
 */
import { z } from "zod";
import {
  changeOwnPassword,
  ZChangeOwnPasswordOptions,
} from "@/lib/control/auth/change-own-password";
import { describePrincipal } from "@/lib/control/auth/describe-principal";
import { listSessions } from "@/lib/control/auth/list-sessions";
import { revokeSession, ZSessionId } from "@/lib/control/auth/revoke-session";
import { PERMISSIONS, type Permission } from "@/lib/control/auth/roles";
import {
  clearedSessionCookieHeader,
  isSecureCookieRequest,
  sessionCookieHeader,
} from "@/lib/control/auth/session-cookie";
import { signIn, ZSignInCredentials } from "@/lib/control/auth/sign-in";
import { clientAddressOf, requestOriginOf } from "@/lib/server/client-address";
import { authDeps, ssoSettingsFromEnv } from "@/lib/server/composition";
import { loadEnv } from "@/lib/server/env";
import { providerSignOutUrl } from "@/lib/server/sso/oidc-flow";
import { consoleOriginOf } from "@/lib/server/sso/sso-routes";
import { defineEndpoint, principalOf } from "../endpoint";
import { ZOperatorRecord } from "./operators";
import { strictBody, strictParams, ZAuditReceipt } from "./shared";
import { ZApiTokenRecord } from "./tokens";

export const ZSessionRecord = z.object({
  id: z.string(),
  operatorId: z.string(),
  createdAt: z.string(),
  expiresAt: z.string().describe("The absolute end; the idle limit may end it sooner."),
  lastSeenAt: z.string().describe("Exact to a minute."),
  revokedAt: z.string().nullable(),
  userAgent: z.string().nullable(),
  address: z.string().nullable(),
});

const ZPermission = z.enum(Object.keys(PERMISSIONS) as [Permission, ...Permission[]]);
const tag = "Authentication";

function isSecure(request: Request): boolean {
  return isSecureCookieRequest(requestOriginOf(request), loadEnv().COOKIE_SECURE);
}

export const signInEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/auth/sign-in",
  summary: "Sign in with an email and a password",
  description:
    "Sets the `lp_session` cookie (httpOnly, SameSite=Lax, Secure outside local development). Rate limited per client address (20 attempts, then 1 per 10 s) and by failures per account from one address (5, then 1 per 30 s) and per account (10, then 1 per 30 s; then only an address that has not failed may try): 429 with Retry-After. A correct password never counts as a failure. With password sign-in turned off (`PASSWORD_SIGN_IN=off`, single sign-on instead), 403 FORBIDDEN except for the break-glass admins, whose sign-ins are audited (docs/sso.md).",
  tag,
  access: "public",
  refuseCrossSite: true,
  body: ZSignInCredentials,
  response: z.object({ operator: ZOperatorRecord, session: ZSessionRecord }),
  errors: ["UNAUTHENTICATED", "FORBIDDEN", "CROSS_SITE_REQUEST", "RATE_LIMITED"],
  handle: ({ body, request }) =>
    signIn(
      {
        ...body,
        address: clientAddressOf(request),
        userAgent: request.headers.get("user-agent"),
      },
      authDeps(),
    ),
  headers: (result, { request }) => ({
    "set-cookie": sessionCookieHeader(result.sessionToken, {
      secure: isSecure(request),
      maxAgeSec: authDeps().sessions.lifetimeMs / 1000,
    }),
  }),
});

export const signOutEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/auth/sign-out",
  summary: "End the current session and clear its cookie",
  description:
    "For a session signed in through the identity provider, `providerSignOutUrl` is where the browser goes next to sign out there too (its end-session endpoint, with the session's ID token as `id_token_hint`; docs/sso.md); null otherwise.",
  tag,
  access: "session",
  response: z.object({ providerSignOutUrl: z.string().nullable() }),
  handle: async (input) => {
    const principal = principalOf(input);
    if (principal.kind !== "operator") return { providerSignOutUrl: null };
    const { ssoTokens } = await revokeSession(
      { operatorId: principal.id, sessionId: principal.sessionId },
      authDeps(),
    );
    const settings = ssoSettingsFromEnv();
    if (settings === null || ssoTokens === null) return { providerSignOutUrl: null };
    return {
      providerSignOutUrl: await providerSignOutUrl({
        settings,
        sealedTokens: ssoTokens,
        secret: loadEnv().SESSION_SECRET,
        origin: consoleOriginOf(input.request),
      }),
    };
  },
  headers: (_result, { request }) => ({
    "set-cookie": clearedSessionCookieHeader(isSecure(request)),
  }),
});

export const meEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/auth/me",
  summary: "Who is calling, and what they may do",
  tag,
  access: "authenticated",
  response: z.discriminatedUnion("kind", [
    z.object({
      kind: z.literal("operator"),
      permissions: z.array(ZPermission).readonly(),
      operator: ZOperatorRecord,
      session: ZSessionRecord,
    }),
    z.object({
      kind: z.literal("token"),
      permissions: z.array(ZPermission).readonly(),
      apiToken: ZApiTokenRecord,
    }),
  ]),
  handle: (input) => describePrincipal(principalOf(input), authDeps()),
});

export const changePasswordEndpoint = defineEndpoint({
  method: "POST",
  path: "/api/v1/auth/password",
  summary: "Change your own password; your other sessions end",
  tag,
  access: "session",
  body: strictBody(ZChangeOwnPasswordOptions.shape),
  response: z.object({
    operator: ZOperatorRecord,
    sessionsRevoked: z.number().int(),
    ...ZAuditReceipt,
  }),
  errors: ["RATE_LIMITED"],
  handle: ({ body, request, requestId, ...input }) =>
    changeOwnPassword(
      principalOf(input),
      body,
      {
        address: clientAddressOf(request),
        requestId,
      },
      authDeps(),
    ),
});

export const listSessionsEndpoint = defineEndpoint({
  method: "GET",
  path: "/api/v1/auth/sessions",
  summary: "Your sessions that still work, newest first",
  tag,
  access: "session",
  response: z.object({
    currentSessionId: z.string(),
    sessions: z.array(ZSessionRecord),
  }),
  handle: async (input) => {
    const principal = principalOf(input);
    return {
      currentSessionId: principal.kind === "operator" ? principal.sessionId : "",
      sessions: await listSessions(principal.id, authDeps()),
    };
  },
});

export const revokeSessionEndpoint = defineEndpoint({
  method: "DELETE",
  path: "/api/v1/auth/sessions/{id}",
  summary: "End one of your sessions (another browser, or this one)",
  tag,
  access: "session",
  params: strictParams({ id: ZSessionId }),
  response: z.object({ session: ZSessionRecord }),
  errors: ["NOT_FOUND"],
  handle: ({ params, ...input }) =>
    revokeSession({ operatorId: principalOf(input).id, sessionId: params.id }, authDeps()),
  headers: (result, input): Record<string, string> => {
    const principal = principalOf(input);
    return principal.kind === "operator" && principal.sessionId === result.session.id
      ? { "set-cookie": clearedSessionCookieHeader(isSecure(input.request)) }
      : {};
  },
});
