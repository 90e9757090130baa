/**
 * Runs before every route (Next.js's proxy, on the Node.js runtime): refuses a path that is not
 * valid percent-encoding (400, the API's error shape under /api), and puts the security headers
 * (lib/api/security-headers.ts) on every response.
 *
 * The two import routes are left out (`config.matcher`): Next.js copies a request's body for the
 * proxy, up to 10 MB, and a larger body reached the route truncated (a 100 MB policy import
 * answered 400 MALFORMED_JSON); a larger limit would hold the whole body in memory twice. Their
 * route files add the security headers themselves (lib/api/route-handler.ts
 * `routeHandlersOutsideProxy`).
 */
import { type NextRequest, NextResponse } from "next/server";
import { errorResponse, newRequestId } from "@/lib/api/error-response";
import { malformedSegmentOf, securityHeaders } from "@/lib/api/security-headers";
import { AppError } from "@/lib/control/errors";
import { requestOriginOf } from "@/lib/server/client-address";

function withHeaders(response: Response, headers: Record<string, string>): Response {
  for (const [name, value] of Object.entries(headers)) response.headers.set(name, value);
  return response;
}

export function proxy(request: NextRequest): Response {
  const headers = securityHeaders(requestOriginOf(request).isHttps);
  const pathname = request.nextUrl.pathname;
  const segment = malformedSegmentOf(pathname);
  if (segment !== null) {
    const message = `Segment ${segment} of the path is not valid percent-encoding (UTF-8 bytes as %XX).`;
    if (pathname === "/api" || pathname.startsWith("/api/")) {
      return withHeaders(
        errorResponse(
          new AppError("MALFORMED_URL", message, {
            fieldErrors: [{ path: "path", message }],
          }),
          newRequestId(),
        ),
        headers,
      );
    }
    return withHeaders(
      new Response(
        `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Bad address · Limitplane</title></head><body><main><h1>Bad address</h1><p>${message}</p><p><a href="/">Go to the overview</a></p></main></body></html>`,
        { status: 400, headers: { "content-type": "text/html; charset=utf-8" } },
      ),
      headers,
    );
  }
  return withHeaders(NextResponse.next(), headers);
}

export const config = {
  matcher: ["/((?!api/v1/policy/import$|api/v1/descriptor-rules/import-envoy$).*)"],
};
