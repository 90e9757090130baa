/**
 * Cross-site request protection for requests authenticated by the session cookie.
 *
 * The cookie is `SameSite=Lax`, so browsers do not send it on cross-site POSTs; as a second,
 * independent layer every state-changing request made with a session must prove it comes from the
 * console's own origin: its `Origin` header (which browsers always send on POST, PUT, PATCH and
 * DELETE) must equal the origin the request was addressed to, or, failing an Origin header,
 * `Sec-Fetch-Site` must be `same-origin`. Requests with an API token carry no ambient credential
 * and are not checked.
 */
import { requestOriginOf } from "@/lib/server/client-address";

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

export function isSafeMethod(method: string): boolean {
  return SAFE_METHODS.has(method.toUpperCase());
}

/**
 * The origin the request was addressed to: its scheme and host as `requestOriginOf` reads them,
 * so forwarded headers count only from trusted proxies, by the nearest proxy's (last) value.
 */
export function requestOrigin(request: Request): string | null {
  const { host, isHttps } = requestOriginOf(request);
  return host === null ? null : `${isHttps ? "https" : "http"}://${host}`;
}

export function isSameOriginRequest(request: Request): boolean {
  const origin = request.headers.get("origin");
  if (origin !== null && origin !== "null") {
    return origin.toLowerCase() === requestOrigin(request);
  }
  return request.headers.get("sec-fetch-site") === "same-origin";
}

/**
 * True when a browser says the request comes from another site: an `Origin` of another origin,
 * or, without one, `Sec-Fetch-Site` other than `same-origin` or `none` (typed in the address
 * bar). A request with neither header is not a browser's cross-site request (curl, scripts).
 */
export function isCrossSiteBrowserRequest(request: Request): boolean {
  const origin = request.headers.get("origin");
  if (origin !== null) return origin === "null" || origin.toLowerCase() !== requestOrigin(request);
  const site = request.headers.get("sec-fetch-site");
  return site !== null && site !== "same-origin" && site !== "none";
}
