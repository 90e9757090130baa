/**
 * The Fetch API adapter: for a Next.js route handler, or any server built on `Request` and
 * `Response` (Deno, Bun, Hono, undici-based servers).
 *
 * ```ts
 * const limit = createFetchMiddleware(enforcer, { identify: (request) => lookUpApiKey(request) });
 * export const GET = (request: Request) => limit(request, () => Response.json({ ok: true }));
 * // or: export const GET = withRateLimit(enforcer, handler, options);
 * ```
 *
 * Admitted: the handler's response, with the rate-limit headers added. Rejected: 429 (quota
 * exceeded) or 503 (fail-closed, limiter unavailable) with `Retry-After`, the headers, and the
 * `application/problem+json` body `buildRateLimitResponse` makes; the handler is not called.
 */

import { forwardedClientAddress } from "../policy/address";
import type { RequestChecker } from "./decision-engine";
import { enforcerRequestOf, type HttpAdapterOptions, trustedHops } from "./http-adapter";

export type FetchHandler = (request: Request) => Response | Promise<Response>;

export type FetchMiddlewareOptions = HttpAdapterOptions<Request>;

export type FetchMiddleware = (request: Request, handler: FetchHandler) => Promise<Response>;

export function createFetchMiddleware(
  checker: RequestChecker,
  options: FetchMiddlewareOptions = {},
): FetchMiddleware {
  const hops = trustedHops(options.trustProxy);
  return async (request, handler) => {
    const identity = options.identify === undefined ? null : await options.identify(request);
    const clientAddress =
      options.clientAddress?.(request) ??
      forwardedClientAddress(request.headers.get("x-forwarded-for"), hops);
    const result = await checker.check(
      enforcerRequestOf({
        identity,
        method: request.method,
        path: new URL(request.url).pathname,
        clientAddress,
        cost: options.cost?.(request),
        endpointClass: options.endpointClass?.(request),
      }),
    );
    const { http } = result;
    if (http.status !== null) {
      return new Response(http.bodyText ?? JSON.stringify(http.body), {
        status: http.status,
        headers: http.headers,
      });
    }
    return withHeaders(await handler(request), http.headers);
  };
}

/**
 * `handler` behind the rate limiter, with the same signature (Next.js passes a context as the
 * second argument; it is handed through).
 */
export function withRateLimit<Rest extends unknown[]>(
  checker: RequestChecker,
  handler: (request: Request, ...rest: Rest) => Response | Promise<Response>,
  options: FetchMiddlewareOptions = {},
): (request: Request, ...rest: Rest) => Promise<Response> {
  const middleware = createFetchMiddleware(checker, options);
  return (request, ...rest) => middleware(request, (inner) => handler(inner, ...rest));
}

/**
 * `response` with `headers` set. A response whose headers are immutable (from `fetch`, or
 * `Response.redirect`) is copied first, body streamed through.
 */
function withHeaders(response: Response, headers: Readonly<Record<string, string>>): Response {
  const entries = Object.entries(headers);
  if (entries.length === 0) return response;
  try {
    for (const [name, value] of entries) response.headers.set(name, value);
    return response;
  } catch {
    const copy = new Response(response.body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
    for (const [name, value] of entries) copy.headers.set(name, value);
    return copy;
  }
}
