/**
 * What the console remembers between sending a browser to the identity provider and its return:
 * the PKCE verifier, the state and the nonce, where to go afterwards, and until when. It travels in
 * a cookie (`lp_sso`, httpOnly, SameSite=Lax so the provider's redirect back carries it, 10
 * minutes), sealed with an HMAC under SESSION_SECRET so the browser can neither read a forged one
 * into the check nor change `next`. The state and nonce are then compared by openid-client with
 * what the provider returns; a callback without this cookie, or with another browser's, fails.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { z } from "zod";

export const SSO_FLOW_COOKIE = "lp_sso";
/** How long a browser may take at the provider. */
export const SSO_FLOW_TTL_MS = 10 * 60_000;

const ZFlowState = z.strictObject({
  verifier: z.string().min(43).max(128),
  state: z.string().min(1).max(200),
  nonce: z.string().min(1).max(200),
  next: z.string().max(2_000),
  expiresAtMs: z.number().int(),
});
export type SsoFlowState = z.infer<typeof ZFlowState>;

function mac(payload: string, secret: string): Buffer {
  return createHmac("sha256", `lp-sso-flow:${secret}`).update(payload).digest();
}

export function sealFlowState(state: SsoFlowState, secret: string): string {
  const payload = Buffer.from(JSON.stringify(state)).toString("base64url");
  return `${payload}.${mac(payload, secret).toString("base64url")}`;
}

/** The state, or null when the value is missing, forged, altered, malformed or expired. */
export function openFlowState(
  sealed: string | null,
  secret: string,
  nowMs: number,
): SsoFlowState | null {
  if (sealed === null || sealed.length > 4_000) return null;
  const [payload, signature, extra] = sealed.split(".");
  if (payload === undefined || signature === undefined || extra !== undefined) return null;
  const expected = mac(payload, secret);
  const given = Buffer.from(signature, "base64url");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
  } catch {
    return null;
  }
  const result = ZFlowState.safeParse(parsed);
  if (!result.success || result.data.expiresAtMs <= nowMs) return null;
  return result.data;
}

/** The `Set-Cookie` value carrying the sealed state (empty and expired: removes it). */
export function flowCookieHeader(value: string, secure: boolean, maxAgeSec: number): string {
  return [
    `${SSO_FLOW_COOKIE}=${value}`,
    "Path=/auth/oidc",
    `Max-Age=${maxAgeSec}`,
    "HttpOnly",
    "SameSite=Lax",
    ...(secure ? ["Secure"] : []),
  ].join("; ");
}

/** The named cookie's value in a `Cookie` header, or null. */
export function cookieValue(cookieHeader: string | null, name: string): string | null {
  for (const part of (cookieHeader ?? "").split(";")) {
    const separator = part.indexOf("=");
    if (separator !== -1 && part.slice(0, separator).trim() === name) {
      const value = part.slice(separator + 1).trim();
      return value === "" ? null : value;
    }
  }
  return null;
}
