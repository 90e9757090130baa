/**
 * The two browser routes of single sign-on (app/auth/oidc/start, app/auth/oidc/callback): thin,
 * they read the configuration and the request, call oidc-flow.ts, and answer with a redirect.
 * They are navigations, not API calls, so they live outside `/api` and answer no JSON.
 */
import "server-only";
import { newRequestId } from "@/lib/api/error-response";
import { safeNextPath } from "@/lib/console/safe-next-path";
import { isSecureCookieRequest, sessionCookieHeader } from "@/lib/control/auth/session-cookie";
import { clientAddressOf, requestOriginOf } from "../client-address";
import { authDeps, clock, ssoSettingsFromEnv } from "../composition";
import { loadEnv } from "../env";
import {
  acceptBackchannelLogout,
  finishSsoSignIn,
  type SsoRedirect,
  startSsoSignIn,
} from "./oidc-flow";

function redirect(to: SsoRedirect, requestId: string): Response {
  const headers = new Headers({
    location: to.location,
    "cache-control": "no-store",
    "x-request-id": requestId,
  });
  for (const cookie of to.setCookies) headers.append("set-cookie", cookie);
  return new Response(null, { status: 303, headers });
}

/** The console's origin as the browser sees it, as far as CONSOLE_TRUST_PROXY lets it be read. */
export function consoleOriginOf(request: Request): string {
  const origin = requestOriginOf(request);
  const scheme = origin.isHttps ? "https" : "http";
  return `${scheme}://${origin.host ?? new URL(request.url).host}`;
}

function flowBase(request: Request) {
  const settings = ssoSettingsFromEnv();
  const env = loadEnv();
  const origin = requestOriginOf(request);
  return {
    settings,
    secret: env.SESSION_SECRET,
    origin: consoleOriginOf(request),
    isSecureCookie: isSecureCookieRequest(origin, env.COOKIE_SECURE),
    nowMs: clock().nowMs(),
  };
}

const NOT_CONFIGURED: SsoRedirect = { location: "/sign-in?sso=not-configured", setCookies: [] };

export async function handleSsoStart(request: Request): Promise<Response> {
  const requestId = newRequestId();
  const { settings, ...base } = flowBase(request);
  if (settings === null) return redirect(NOT_CONFIGURED, requestId);
  const next = safeNextPath(new URL(request.url).searchParams.get("next") ?? undefined);
  return redirect(await startSsoSignIn({ ...base, settings, next }), requestId);
}

export async function handleSsoCallback(request: Request): Promise<Response> {
  const requestId = newRequestId();
  const { settings, ...base } = flowBase(request);
  if (settings === null) return redirect(NOT_CONFIGURED, requestId);
  const deps = authDeps();
  const answer = await finishSsoSignIn({
    ...base,
    settings,
    callbackUrl: new URL(request.url),
    cookieHeader: request.headers.get("cookie"),
    client: { address: clientAddressOf(request), userAgent: request.headers.get("user-agent") },
    deps,
    requestId,
    sessionCookie: (result) =>
      sessionCookieHeader(result.sessionToken, {
        secure: base.isSecureCookie,
        maxAgeSec: deps.sessions.lifetimeMs / 1000,
      }),
  });
  return redirect(answer, requestId);
}

/** The provider's back-channel logout: a form post with `logout_token` (no cookie, no browser). */
export async function handleSsoBackchannelLogout(request: Request): Promise<Response> {
  const requestId = newRequestId();
  const settings = ssoSettingsFromEnv();
  const headers = { "cache-control": "no-store", "x-request-id": requestId };
  if (settings === null) return new Response(null, { status: 404, headers });
  const isForm = (request.headers.get("content-type") ?? "").startsWith(
    "application/x-www-form-urlencoded",
  );
  // A logout token is a few KiB; a body without a small declared length is not read.
  const length = Number(request.headers.get("content-length"));
  const isSmall = Number.isInteger(length) && length > 0 && length <= 16_384;
  const text = isForm && isSmall ? await request.text().catch(() => "") : "";
  const logoutToken = new URLSearchParams(text.slice(0, 16_384)).get("logout_token");
  const answer = await acceptBackchannelLogout({
    settings,
    logoutToken,
    deps: authDeps(),
    requestId,
  });
  return new Response(null, { status: answer.ok ? 200 : 400, headers });
}
