/**
 * The OpenID Connect authorization code flow with PKCE, on `openid-client` (the relying party; it
 * reads the provider's discovery document, checks the ID token's signature, issuer, audience,
 * expiry and nonce, and the returned state, and refuses a plain-http issuer):
 *
 * 1. `startSsoSignIn`: a new PKCE verifier, state and nonce, sealed into the `lp_sso` cookie
 *    (lib/control/auth/sso-flow-state.ts), and a redirect to the provider's authorization
 *    endpoint with the S256 challenge;
 * 2. `finishSsoSignIn`: on the provider's redirect back, the cookie is opened, the code exchanged
 *    with the verifier, the state and nonce checked, the claims read (the ID token's, with the
 *    userinfo endpoint's when the email or the role claim is missing), the role mapped, and the
 *    account signed in (lib/control/auth/sign-in-with-sso.ts).
 *
 * Every failure becomes a redirect to `/sign-in?sso=<reason>`, whose page says what happened; the
 * cause is logged once with the request id.
 */
import "server-only";
import { request as httpsRequest } from "node:https";
import * as jose from "jose";
import * as oidc from "openid-client";
import { endSsoSessions } from "@/lib/control/auth/end-sso-sessions";
import { type SsoSignInResult, signInWithSso } from "@/lib/control/auth/sign-in-with-sso";
import {
  cookieValue,
  flowCookieHeader,
  openFlowState,
  SSO_FLOW_COOKIE,
  SSO_FLOW_TTL_MS,
  sealFlowState,
} from "@/lib/control/auth/sso-flow-state";
import type { SsoIdentity, SsoRechecker, SsoRecheckVerdict } from "@/lib/control/auth/sso-identity";
import { roleFromClaims, type SsoSettings } from "@/lib/control/auth/sso-settings";
import type { AuthDeps } from "@/lib/control/deps";
import { AppError } from "@/lib/control/errors";
import { openSsoTokens, sealSsoTokens } from "./sso-tokens";

/** Where the provider posts back-channel logout tokens; register `<console origin>` + this. */
export const SSO_BACKCHANNEL_LOGOUT_PATH = "/auth/oidc/backchannel-logout";

/** The path the provider sends the browser back to; register `<console origin>` + this. */
export const SSO_CALLBACK_PATH = "/auth/oidc/callback";

/** Why an SSO sign-in failed, as `/sign-in?sso=<reason>` says it (components/auth/sso-notice.tsx). */
export type SsoFailure =
  | "expired"
  | "refused-by-provider"
  | "check-failed"
  | "provider-unreachable"
  | "no-role"
  | "not-linked"
  | "disabled";

export interface SsoRedirect {
  readonly location: string;
  readonly setCookies: readonly string[];
}

export interface SsoFlowOptions {
  readonly settings: SsoSettings;
  /** SESSION_SECRET: seals the flow cookie. */
  readonly secret: string;
  /** The console's origin as the browser sees it (`https://console.example.com`). */
  readonly origin: string;
  readonly isSecureCookie: boolean;
  readonly nowMs: number;
}

const configurations = new Map<string, Promise<oidc.Configuration>>();

/** `fetch` over node:https trusting `caPem` too (a provider whose certificate a private CA signed). */
function fetchTrusting(caPem: string): oidc.CustomFetch {
  return (url, options) =>
    new Promise<Response>((resolve, reject) => {
      const headers: Record<string, string> = {};
      new Headers(options.headers).forEach((value, name) => {
        headers[name] = value;
      });
      const outgoing = httpsRequest(
        url,
        { method: options.method, headers, ca: caPem, signal: options.signal ?? undefined },
        (incoming) => {
          const chunks: Buffer[] = [];
          incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
          incoming.on("error", reject);
          incoming.on("end", () => {
            const responseHeaders = new Headers();
            for (const [name, value] of Object.entries(incoming.headers)) {
              if (typeof value === "string") responseHeaders.set(name, value);
              else if (Array.isArray(value))
                for (const item of value) responseHeaders.append(name, item);
            }
            const status = incoming.statusCode ?? 502;
            const body = status === 204 || status === 304 ? null : Buffer.concat(chunks);
            resolve(new Response(body, { status, headers: responseHeaders }));
          });
        },
      );
      outgoing.on("error", reject);
      const { body } = options;
      if (typeof body === "string" || body instanceof Uint8Array) outgoing.end(body);
      else if (body instanceof URLSearchParams) outgoing.end(body.toString());
      else outgoing.end();
    });
}

/** The provider's configuration, discovered once per process (again after a failure). */
function configurationOf(settings: SsoSettings): Promise<oidc.Configuration> {
  const key = `${settings.issuer}\n${settings.clientId}`;
  let found = configurations.get(key);
  if (found === undefined) {
    const customFetch = settings.caPem === null ? undefined : fetchTrusting(settings.caPem);
    found = oidc
      .discovery(
        new URL(settings.issuer),
        settings.clientId,
        settings.clientSecret ?? undefined,
        settings.clientSecret === null ? oidc.None() : undefined,
        { timeout: 10, ...(customFetch === undefined ? {} : { [oidc.customFetch]: customFetch }) },
      )
      .then((configuration) => {
        if (customFetch !== undefined) configuration[oidc.customFetch] = customFetch;
        return configuration;
      });
    found.catch(() => configurations.delete(key));
    configurations.set(key, found);
  }
  return found;
}

const SCOPE = "openid email profile";

/** Step 1: where to send the browser, and the cookie that remembers the flow. */
export async function startSsoSignIn(
  options: SsoFlowOptions & { readonly next: string },
): Promise<SsoRedirect> {
  let configuration: oidc.Configuration;
  try {
    configuration = await configurationOf(options.settings);
  } catch (error: unknown) {
    console.warn(`sso: the provider's discovery failed: ${String(error)}`);
    return failure("provider-unreachable", options);
  }
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  const scopes = new Set([...SCOPE.split(" "), ...scopesForClaim(options.settings.roleClaim)]);
  const location = oidc.buildAuthorizationUrl(configuration, {
    redirect_uri: `${options.origin}${SSO_CALLBACK_PATH}`,
    scope: [...scopes].join(" "),
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: "S256",
    state,
    nonce,
  });
  const sealed = sealFlowState(
    { verifier, state, nonce, next: options.next, expiresAtMs: options.nowMs + SSO_FLOW_TTL_MS },
    options.secret,
  );
  return {
    location: location.href,
    setCookies: [flowCookieHeader(sealed, options.isSecureCookie, SSO_FLOW_TTL_MS / 1000)],
  };
}

/** Providers release a `groups` claim under a scope of the same name; others need none. */
function scopesForClaim(claim: string): string[] {
  return claim === "groups" ? ["groups"] : [];
}

function failure(reason: SsoFailure, options: SsoFlowOptions): SsoRedirect {
  return {
    location: `/sign-in?sso=${reason}`,
    setCookies: [flowCookieHeader("", options.isSecureCookie, 0)],
  };
}

function failureOf(error: AppError): SsoFailure {
  const reason = error.details?.ssoFailure;
  if (typeof reason === "string") return reason as SsoFailure;
  return error.code === "FORBIDDEN" ? "not-linked" : "check-failed";
}

export interface FinishSsoOptions extends SsoFlowOptions {
  /** The callback's URL as the browser sent it (with `code` and `state`). */
  readonly callbackUrl: URL;
  readonly cookieHeader: string | null;
  readonly client: { readonly address: string | null; readonly userAgent: string | null };
  readonly deps: AuthDeps;
  readonly requestId: string;
  /** Called with the signed-in result, to build the session cookie. */
  sessionCookie(result: SsoSignInResult): string;
}

/** Step 2: the provider sent the browser back. */
export async function finishSsoSignIn(options: FinishSsoOptions): Promise<SsoRedirect> {
  const log = (message: string) => console.warn(`[${options.requestId}] sso: ${message}`);
  const flow = openFlowState(
    cookieValue(options.cookieHeader, SSO_FLOW_COOKIE),
    options.secret,
    options.nowMs,
  );
  if (flow === null) {
    log("no valid sign-in in progress (the lp_sso cookie is missing, altered or expired)");
    return failure("expired", options);
  }
  const providerError = options.callbackUrl.searchParams.get("error");
  if (providerError !== null) {
    log(`the provider refused: ${providerError.slice(0, 100)}`);
    return failure("refused-by-provider", options);
  }
  let configuration: oidc.Configuration;
  try {
    configuration = await configurationOf(options.settings);
  } catch (error: unknown) {
    log(`the provider's discovery failed: ${String(error)}`);
    return failure("provider-unreachable", options);
  }
  // openid-client takes the redirect_uri from this URL (origin and path, no query).
  const currentUrl = new URL(`${options.origin}${SSO_CALLBACK_PATH}`);
  currentUrl.search = options.callbackUrl.search;
  let claims: Record<string, unknown>;
  let sealedTokens: string;
  try {
    const tokens = await oidc.authorizationCodeGrant(configuration, currentUrl, {
      pkceCodeVerifier: flow.verifier,
      expectedState: flow.state,
      expectedNonce: flow.nonce,
      idTokenExpected: true,
    });
    const idClaims = tokens.claims();
    if (idClaims === undefined || tokens.id_token === undefined) throw new Error("no ID token");
    claims = await claimsWithUserInfo(configuration, options.settings, idClaims, tokens);
    sealedTokens = sealSsoTokens(
      {
        refreshToken: tokens.refresh_token ?? null,
        accessToken: tokens.access_token,
        idToken: tokens.id_token,
      },
      options.secret,
    );
  } catch (error: unknown) {
    log(`the code exchange or its checks failed: ${messageOf(error)}`);
    return failure("check-failed", options);
  }
  try {
    const result = await signInWithSso(
      identityOf(claims, configuration, options.settings),
      options.client,
      options.deps,
      { sealed: sealedTokens, checkDueAtMs: options.nowMs + options.settings.recheckIntervalMs },
    );
    return {
      location: flow.next,
      setCookies: [flowCookieHeader("", options.isSecureCookie, 0), options.sessionCookie(result)],
    };
  } catch (error: unknown) {
    if (!(error instanceof AppError)) throw error;
    log(`sign-in refused: ${error.message}`);
    return failure(failureOf(error), options);
  }
}

function pick(source: Readonly<Record<string, unknown>>, names: readonly string[]) {
  return Object.fromEntries(
    names.filter((name) => name in source).map((name) => [name, source[name]]),
  );
}

function messageOf(error: unknown): string {
  if (error instanceof oidc.ResponseBodyError) {
    return `${error.error}${error.error_description ? ` (${error.error_description})` : ""}`;
  }
  return error instanceof Error ? error.message : String(error);
}

/** The ID token's claims, with userinfo's when the email or the role claim is missing. */
async function claimsWithUserInfo(
  configuration: oidc.Configuration,
  settings: SsoSettings,
  idClaims: oidc.IDToken,
  tokens: { readonly access_token: string },
): Promise<Record<string, unknown>> {
  const claims: Record<string, unknown> = { ...idClaims };
  if (claims.email !== undefined && claims[settings.roleClaim] !== undefined) return claims;
  const userInfo = await oidc.fetchUserInfo(configuration, tokens.access_token, idClaims.sub);
  const wanted = ["email", "email_verified", "name", settings.roleClaim];
  return { ...claims, ...pick(userInfo, wanted) };
}

function identityOf(
  claims: Readonly<Record<string, unknown>>,
  configuration: oidc.Configuration,
  settings: SsoSettings,
): SsoIdentity {
  return {
    issuer: configuration.serverMetadata().issuer,
    subject: String(claims.sub ?? ""),
    email: typeof claims.email === "string" ? claims.email : null,
    isEmailVerified: claims.email_verified === true,
    name: typeof claims.name === "string" ? claims.name : null,
    role: roleFromClaims(claims, settings),
  };
}

/**
 * Whether a failed call means the provider refused (a 4xx answer, an invalid grant, a token that
 * fails its checks) or could not be reached (no answer, a timeout, a 5xx).
 */
function isRefusal(error: unknown): boolean {
  if (error instanceof oidc.ResponseBodyError) return error.status < 500;
  if (error instanceof oidc.WWWAuthenticateChallengeError) return error.status < 500;
  if (error instanceof oidc.ClientError) return error.code !== "OAUTH_RESPONSE_IS_NOT_CONFORM";
  return false;
}

/**
 * The role re-check at the provider (lib/control/auth/recheck-sso-session.ts): the session's
 * refresh token is exchanged for new tokens (the provider refuses it once the identity is
 * disabled, signed out or its grant revoked), whose ID token, or userinfo, gives the claims now.
 * A session without a refresh token asks userinfo with its access token, which works until that
 * token expires; then the provider refuses and the session ends.
 */
export function ssoRechecker(settings: SsoSettings, secret: string): SsoRechecker {
  return {
    intervalMs: settings.recheckIntervalMs,
    onOutage: settings.onProviderOutage,
    async check(sealed): Promise<SsoRecheckVerdict> {
      const tokens = openSsoTokens(sealed, secret);
      if (tokens === null) {
        return { kind: "refused", reason: "the session's provider tokens are missing or altered" };
      }
      let configuration: oidc.Configuration;
      try {
        configuration = await configurationOf(settings);
      } catch (error: unknown) {
        return { kind: "unreachable", reason: `discovery failed: ${messageOf(error)}` };
      }
      try {
        // The ID token was checked at sign-in and kept sealed: its subject is the identity's.
        const signedIn = jose.decodeJwt(tokens.idToken);
        if (typeof signedIn.sub !== "string") throw new Error("the stored ID token has no sub");
        let next = tokens;
        let idClaims: oidc.IDToken | undefined;
        if (tokens.refreshToken !== null) {
          const refreshed = await oidc.refreshTokenGrant(configuration, tokens.refreshToken);
          idClaims = refreshed.claims();
          if (idClaims !== undefined && idClaims.sub !== signedIn.sub) {
            return { kind: "refused", reason: "the refreshed ID token names another subject" };
          }
          next = {
            refreshToken: refreshed.refresh_token ?? tokens.refreshToken,
            accessToken: refreshed.access_token,
            idToken: refreshed.id_token ?? tokens.idToken,
          };
        }
        const base = idClaims ?? ({ sub: signedIn.sub } as oidc.IDToken);
        const claims =
          idClaims === undefined
            ? {
                ...base,
                ...(await oidc.fetchUserInfo(configuration, next.accessToken, signedIn.sub)),
              }
            : await claimsWithUserInfo(configuration, settings, idClaims, {
                access_token: next.accessToken,
              });
        return {
          kind: "confirmed",
          identity: identityOf(claims, configuration, settings),
          sealedTokens: sealSsoTokens(next, secret),
        };
      } catch (error: unknown) {
        return isRefusal(error)
          ? { kind: "refused", reason: messageOf(error).slice(0, 300) }
          : { kind: "unreachable", reason: messageOf(error).slice(0, 300) };
      }
    },
  };
}

/** The path the provider sends the browser to after signing out there; register it too. */
export const SSO_POST_LOGOUT_PATH = "/sign-in?signedOut=1";

/**
 * OpenID Connect RP-Initiated Logout 1.0: where to send the browser of an operator who signs out
 * of a session signed in through the provider, so they are signed out there too: the provider's
 * `end_session_endpoint` with the session's ID token as `id_token_hint` and
 * `<origin>/sign-in?signedOut=1` as `post_logout_redirect_uri`. Null when the session was not
 * signed in through the provider, or the provider has no end-session endpoint or cannot be reached
 * (the console's own session has ended either way).
 */
export async function providerSignOutUrl(options: {
  readonly settings: SsoSettings;
  readonly sealedTokens: string | null;
  readonly secret: string;
  readonly origin: string;
}): Promise<string | null> {
  const tokens = openSsoTokens(options.sealedTokens, options.secret);
  if (tokens === null) return null;
  try {
    const configuration = await configurationOf(options.settings);
    if (configuration.serverMetadata().end_session_endpoint === undefined) return null;
    return oidc.buildEndSessionUrl(configuration, {
      id_token_hint: tokens.idToken,
      post_logout_redirect_uri: `${options.origin}${SSO_POST_LOGOUT_PATH}`,
    }).href;
  } catch (error: unknown) {
    console.warn(`sso: no sign-out at the provider: ${messageOf(error)}`);
    return null;
  }
}

const BACKCHANNEL_LOGOUT_EVENT = "http://schemas.openid.net/event/backchannel-logout";
const jwksByUri = new Map<string, ReturnType<typeof jose.createRemoteJWKSet>>();

/**
 * OpenID Connect Back-Channel Logout 1.0: the provider posts a signed logout token when an
 * identity signs out there. The token is checked (signature by the provider's keys, issuer,
 * audience, age, the logout event, no nonce) and the identity's sessions here end. Answers
 * whether it was accepted; a refusal is logged once.
 */
export async function acceptBackchannelLogout(options: {
  readonly settings: SsoSettings;
  readonly logoutToken: string | null;
  readonly deps: Pick<AuthDeps, "db" | "clock">;
  readonly requestId: string;
}): Promise<{ readonly ok: true; readonly sessionsEnded: number } | { readonly ok: false }> {
  const log = (message: string) =>
    console.warn(`[${options.requestId}] sso back-channel logout refused: ${message}`);
  if (options.logoutToken === null || options.logoutToken.length > 16_384) {
    log("no logout_token");
    return { ok: false };
  }
  let payload: jose.JWTPayload;
  let issuer: string;
  try {
    const configuration = await configurationOf(options.settings);
    const metadata = configuration.serverMetadata();
    issuer = metadata.issuer;
    if (metadata.jwks_uri === undefined) throw new Error("the provider publishes no jwks_uri");
    let jwks = jwksByUri.get(metadata.jwks_uri);
    if (jwks === undefined) {
      const customFetch = configuration[oidc.customFetch];
      jwks = jose.createRemoteJWKSet(new URL(metadata.jwks_uri), {
        ...(customFetch === undefined
          ? {}
          : { [jose.customFetch]: customFetch as unknown as jose.FetchImplementation }),
      });
      jwksByUri.set(metadata.jwks_uri, jwks);
    }
    ({ payload } = await jose.jwtVerify(options.logoutToken, jwks, {
      issuer,
      audience: options.settings.clientId,
      maxTokenAge: "5m",
    }));
  } catch (error: unknown) {
    log(error instanceof Error ? error.message : String(error));
    return { ok: false };
  }
  const events = payload.events;
  const hasEvent =
    typeof events === "object" && events !== null && BACKCHANNEL_LOGOUT_EVENT in events;
  if (!hasEvent || "nonce" in payload || typeof payload.sub !== "string") {
    log("not a logout token naming a subject (events, nonce or sub)");
    return { ok: false };
  }
  const { sessionsEnded } = await endSsoSessions({ issuer, subject: payload.sub }, options.deps);
  return { ok: true, sessionsEnded };
}
