/**
 * The headers every console response carries (proxy.ts sets them before any route runs):
 *
 * - `Content-Security-Policy: frame-ancestors 'none'` and `X-Frame-Options: DENY` (for older
 *   browsers): no other site may frame the console, so the three-click raise flow cannot be
 *   clickjacked. The policy also pins `base-uri`, `form-action` and `object-src`; it leaves
 *   scripts and styles alone (Next.js inlines its bootstrap scripts);
 * - `X-Content-Type-Options: nosniff`: a response is only what its Content-Type says;
 * - `Referrer-Policy: same-origin`: a link out (an incident's ticket) does not carry the console's
 *   address, which can name a customer;
 * - `Strict-Transport-Security` when the request arrived over https (directly, or as the trusted
 *   proxy's `X-Forwarded-Proto` says: lib/server/client-address.ts).
 */
export const CONTENT_SECURITY_POLICY =
  "frame-ancestors 'none'; base-uri 'self'; form-action 'self'; object-src 'none'";

/** One year; subdomains are left to their own servers. */
export const STRICT_TRANSPORT_SECURITY = "max-age=31536000";

export function securityHeaders(isHttps: boolean): Record<string, string> {
  return {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    ...(isHttps ? { "strict-transport-security": STRICT_TRANSPORT_SECURITY } : {}),
  };
}

/**
 * The index (1-based) of the first path segment that is not valid percent-encoded UTF-8
 * (`%ZZ`, a cut sequence like `%E0%A4%A`, an overlong one like `%C0%AF`), or null. Next.js
 * decodes path parameters itself and answers a bare 500 for these, so they are refused first.
 */
export function malformedSegmentOf(pathname: string): number | null {
  const segments = pathname.split("/");
  for (const [index, segment] of segments.entries()) {
    try {
      decodeURIComponent(segment);
    } catch {
      return index;
    }
  }
  return null;
}
