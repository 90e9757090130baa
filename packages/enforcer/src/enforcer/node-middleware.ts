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
import { forwardedClientAddress } from "../policy/address";
import { type CachedRejectionSink, cachedRejecterOf } from "./cached-rejection";
import type { EnforcerRequest, EnforcerResult, RequestChecker } from "./decision-engine";
import {
  enforcerRequestOf,
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
  const checkNow: (request: EnforcerRequest) => EnforcerResult | Promise<EnforcerResult> =
    checker.checkNow?.bind(checker) ?? ((request) => checker.check(request));
  // A flood of rejections from cached denials is answered without a result object (see
  // `cached-rejection.ts`); `kept` receives the 429 and is written at once, so one serves all.
  const rejectFromCache = cachedRejecterOf(checker);
  const kept: CachedRejectionSink = { rawHeaders: [], bodyText: "" };
  /**
   * Decides for `identity` and answers a rejection itself: true when the request may go on, at
   * once when the decision needed no store call, else as a promise.
   */
  const decide = (
    req: IncomingMessage,
    res: ServerResponse,
    identity: Identity | null,
  ): boolean | Promise<boolean> => {
    const cost = options.cost?.(req);
    const endpointClass = options.endpointClass?.(req);
    const customerId = identity?.customerId;
    if (
      rejectFromCache !== undefined &&
      typeof customerId === "string" &&
      rejectFromCache(
        customerId,
        identity?.tier ?? null,
        req.method ?? "GET",
        req.url ?? "/",
        endpointClass ?? null,
        cost,
        kept,
      )
    ) {
      res.writeHead(429, kept.rawHeaders as string[]);
      res.end(kept.bodyText);
      return false;
    }
    const forwarded = hops === 0 ? undefined : req.headers["x-forwarded-for"];
    const clientAddress =
      options.clientAddress?.(req) ??
      forwardedClientAddress(Array.isArray(forwarded) ? forwarded.join(",") : forwarded, hops) ??
      req.socket.remoteAddress ??
      null;
    const result = checkNow(
      enforcerRequestOf({
        identity,
        method: req.method ?? "GET",
        path: req.url ?? "/",
        clientAddress,
        cost,
        endpointClass,
      }),
    );
    return result instanceof Promise
      ? result.then((decided) => answer(res, decided.http))
      : answer(res, result.http);
  };
  /** Waits for `identify`'s promise, then decides: the closures live here, not per request. */
  const decideLater = (
    req: IncomingMessage,
    res: ServerResponse,
    identified: PromiseLike<Identity | null>,
  ): Promise<boolean> => Promise.resolve(identified).then((identity) => decide(req, res, identity));
  return (req, res, next) => {
    // `next` is called outside the try: an error thrown by the route after it is not the
    // limiter's, and must not reach `next` a second time. This function makes no closure: one
    // that captured `req`, `res` or `next` would cost a context object on every request, taken
    // or not (the asynchronous continuations are in `decideLater` and `settle`).
    let identified: Identity | null | Promise<Identity | null>;
    try {
      identified = identify === undefined ? null : identify(req);
    } catch (error: unknown) {
      next(error);
      return;
    }
    // A synchronous `identify` (an in-memory key lookup) and a decision made without the store
    // (a lease, the denial cache) cost no turn of the microtask queue: `next` is called at once.
    let decided: boolean | Promise<boolean>;
    try {
      decided = isPromiseLike(identified)
        ? decideLater(req, res, identified)
        : decide(req, res, identified);
    } catch (error: unknown) {
      next(error);
      return;
    }
    if (decided === true) {
      next();
      return;
    }
    if (decided === false) return;
    settle(decided, next);
  };
}

/** Calls `next` once `decided` says the request may go on, or with its error. */
function settle(decided: Promise<boolean>, next: NodeNext): void {
  decided.then(
    (mayProceed) => {
      if (mayProceed) next();
    },
    (error: unknown) => next(error),
  );
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
 * (false). A rejection is written with one `writeHead` of a flat list of header names and values
 * (Node's raw form: no record to copy and walk by key; for a kept 429, the list it carries, which
 * Node only reads), and the body already serialized.
 */
function answer(res: ServerResponse, http: RateLimitHttpResult): boolean {
  const { headers } = http;
  if (http.status === null) {
    // for...in over the plain header record: no entries array, no copy (this runs per request).
    for (const name in headers) res.setHeader(name, headers[name] as string);
    return true;
  }
  const body = http.bodyText ?? JSON.stringify(http.body);
  // A rejection made from a kept 429 carries its list already, Content-Length included.
  if (http.rawHeaders !== undefined) {
    res.writeHead(http.status, http.rawHeaders as string[]);
    res.end(body);
    return false;
  }
  const raw: string[] = ["Content-Length", String(Buffer.byteLength(body))];
  for (const name in headers) raw.push(name, headers[name] as string);
  res.writeHead(http.status, raw);
  res.end(body);
  return false;
}
