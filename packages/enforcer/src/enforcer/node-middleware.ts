/**
 * The Node adapter: a `(req, res, next)` middleware for `node:http` servers, and therefore for
 * Express and Connect, which call middleware with the same signature.
 *
 * ```ts
 * const limit = createNodeMiddleware(enforcer, { identify: (req) => lookUpApiKey(req) });
 * app.use(limit);                                         // Express
 * http.createServer((req, res) => limit(req, res, () => route(req, res)));   // plain node:http
 * ```
 *
 * Admitted: the headers are set on `res` and `next()` is called. Rejected: 429 (quota exceeded)
 * or 503 (fail-closed, limiter unavailable) with `Retry-After`, the headers, and the
 * `application/problem+json` body `buildRateLimitResponse` makes, and `next` is not called. A mistake in the calling code (an invalid customer id from `identify`)
 * goes to `next(error)`, as Express expects.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { RequestChecker } from "./decision-engine";
import {
  enforcerRequestOf,
  forwardedClientAddress,
  type HttpAdapterOptions,
  trustedHops,
} from "./http-adapter";

export type NodeNext = (error?: unknown) => void;

export type NodeMiddlewareOptions = HttpAdapterOptions<IncomingMessage>;

export type NodeMiddleware = (req: IncomingMessage, res: ServerResponse, next: NodeNext) => void;

export function createNodeMiddleware(
  checker: RequestChecker,
  options: NodeMiddlewareOptions = {},
): NodeMiddleware {
  const hops = trustedHops(options.trustProxy);
  /** Answers a rejection itself; resolves true when the request may go on. */
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    const identity = options.identify === undefined ? null : await options.identify(req);
    const forwarded = req.headers["x-forwarded-for"];
    const clientAddress =
      options.clientAddress?.(req) ??
      forwardedClientAddress(Array.isArray(forwarded) ? forwarded.join(",") : forwarded, hops) ??
      req.socket.remoteAddress ??
      null;
    const result = await checker.check(
      enforcerRequestOf({
        identity,
        method: req.method ?? "GET",
        path: req.url ?? "/",
        clientAddress,
        cost: options.cost?.(req),
        endpointClass: options.endpointClass?.(req),
      }),
    );
    const { http } = result;
    const { headers } = http;
    // for...in over the plain header record: no entries array, no copy (this runs per request).
    for (const name in headers) res.setHeader(name, headers[name] as string);
    if (http.status === null) return true;
    const body = JSON.stringify(http.body);
    res.setHeader("Content-Length", Buffer.byteLength(body));
    res.writeHead(http.status);
    res.end(body);
    return false;
  };
  return (req, res, next) => {
    // `next` is called outside the try: an error thrown by the route after it is not the
    // limiter's, and must not reach `next` a second time.
    handle(req, res).then(
      (mayProceed) => {
        if (mayProceed) next();
      },
      (error: unknown) => next(error),
    );
  };
}
