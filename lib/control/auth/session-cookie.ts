/**
 * The session cookie: `lp_session`, httpOnly (no script can read it), SameSite=Lax (browsers do not
 * send it on cross-site POSTs), Path=/, and Secure except in local development.
 *
 * The Secure rule (`COOKIE_SECURE`, default `auto`): Secure unless the request is plain http to
 * localhost, 127.0.0.1 or [::1]; `true` always; `false` never (a trusted plain-http network only).
 * The request's scheme and host are read as the client used them, believing forwarded headers only
 * from trusted proxies (`CONSOLE_TRUST_PROXY`, lib/server/client-address.ts): a client's own
 * `X-Forwarded-Proto: http` cannot take Secure off a cookie sent over TLS.
 */
export const SESSION_COOKIE = "lp_session";

export type CookieSecureSetting = "auto" | "true" | "false";

const LOCAL_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** What the cookie's rule needs of a request: `requestOriginOf` in lib/server/client-address.ts. */
export interface CookieRequestOrigin {
  readonly isHttps: boolean;
  /** The host the client addressed, lower-cased, with its port if any; null when unknown. */
  readonly host: string | null;
}

export function isSecureCookieRequest(
  origin: CookieRequestOrigin,
  setting: CookieSecureSetting,
): boolean {
  if (setting !== "auto") return setting === "true";
  if (origin.isHttps || origin.host === null) return true;
  return !LOCAL_HOSTS.has(origin.host.replace(/:\d+$/, ""));
}

export interface SessionCookieOptions {
  readonly secure: boolean;
  /** Seconds until the browser drops it: the session's lifetime. */
  readonly maxAgeSec: number;
}

/** The attributes every session cookie carries, for `cookies().set` in server actions. */
export function sessionCookieAttributes(options: SessionCookieOptions) {
  return {
    httpOnly: true,
    sameSite: "lax" as const,
    path: "/",
    secure: options.secure,
    maxAge: options.maxAgeSec,
  };
}

/** A `Set-Cookie` value that stores the session token. */
export function sessionCookieHeader(token: string, options: SessionCookieOptions): string {
  return [
    `${SESSION_COOKIE}=${token}`,
    "Path=/",
    `Max-Age=${Math.max(0, Math.floor(options.maxAgeSec))}`,
    "HttpOnly",
    "SameSite=Lax",
    ...(options.secure ? ["Secure"] : []),
  ].join("; ");
}

/** A `Set-Cookie` value that removes the session cookie. */
export function clearedSessionCookieHeader(secure: boolean): string {
  return sessionCookieHeader("", { secure, maxAgeSec: 0 });
}

/** The session token in a `Cookie` header, or null. */
export function sessionTokenFromCookieHeader(cookieHeader: string | null): string | null {
  if (cookieHeader === null) return null;
  for (const part of cookieHeader.split(";")) {
    const separator = part.indexOf("=");
    if (separator === -1) continue;
    if (part.slice(0, separator).trim() === SESSION_COOKIE) {
      const value = part.slice(separator + 1).trim();
      return value === "" ? null : value;
    }
  }
  return null;
}
