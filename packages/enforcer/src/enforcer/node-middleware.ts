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
  type Identity,
  trustedHops,
} from "./http-adapter";
import type { RateLimitHttpResult } from "./http-headers";

export type NodeNext = (error?: unknown) => void;

export type NodeMiddlewareOptions = HttpAdapterOptions<IncomingMessage>;

export type NodeMiddleware = (req: IncomingMessage, res: ServerResponse, next: NodeNext) => void;

export function createNodeMiddleware(
  checker: RequestChecker,
  options: NodeMiddlewareOptions = {},
): NodeMiddleware {
  const hops = trustedHops(options.trustProxy);
  const { identify } = options;
  /** Decides for `identity` and answers a rejection itself; resolves true when the request may go on. */
  const decide = (
    req: IncomingMessage,
    res: ServerResponse,
    identity: Identity | null,
  ): Promise<boolean> => {
    const forwarded = hops === 0 ? undefined : req.headers["x-forwarded-for"];
    const clientAddress =
      options.clientAddress?.(req) ??
      forwardedClientAddress(Array.isArray(forwarded) ? forwarded.join(",") : forwarded, hops) ??
      req.socket.remoteAddress ??
      null;
    return checker
      .check(
        enforcerRequestOf({
          identity,
          method: req.method ?? "GET",
          path: req.url ?? "/",
          clientAddress,
          cost: options.cost?.(req),
          endpointClass: options.endpointClass?.(req),
        }),
      )
      .then((result) => answer(res, result.http));
  };
  return (req, res, next) => {
    // `next` is called outside the try: an error thrown by the route after it is not the
    // limiter's, and must not reach `next` a second time. (The callbacks are written inline, not
    // bound to names: a named closure costs a property definition per request under tsx.)
    let identified: Identity | null | Promise<Identity | null>;
    try {
      identified = identify === undefined ? null : identify(req);
    } catch (error: unknown) {
      next(error);
      return;
    }
    // A synchronous `identify` (an in-memory key lookup) costs no extra turn of the microtask queue.
    let decided: Promise<boolean>;
    try {
      decided = isPromiseLike(identified)
        ? Promise.resolve(identified).then((identity) => decide(req, res, identity))
        : decide(req, res, identified);
    } catch (error: unknown) {
      next(error);
      return;
    }
    decided.then(
      (mayProceed) => {
        if (mayProceed) next();
      },
      (error: unknown) => next(error),
    );
  };
}

function isPromiseLike<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as Partial<PromiseLike<T>>).then === "function"
  );
}

/**
 * Puts the decision on `res`: the headers on an admission (true: go on), or the whole rejection
 * (false). A rejection is written with one `writeHead`, which takes the header record as it is,
 * instead of one `setHeader` per field.
 */
function answer(res: ServerResponse, http: RateLimitHttpResult): boolean {
  const { headers } = http;
  if (http.status === null) {
    // for...in over the plain header record: no entries array, no copy (this runs per request).
    for (const name in headers) res.setHeader(name, headers[name] as string);
    return true;
  }
  const body = JSON.stringify(http.body);
  const all: Record<string, string | number> = { "Content-Length": Buffer.byteLength(body) };
  for (const name in headers) all[name] = headers[name] as string;
  res.writeHead(http.status, all);
  res.end(body);
  return false;
}
