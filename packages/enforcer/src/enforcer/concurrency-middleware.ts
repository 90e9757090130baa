/**
 * In-flight caps for servers: a request takes one of a budget's concurrency slots before it is
 * served and gives it back when its response ends (or its connection closes), through the same
 * Redis slots as `acquire` (`outbound-limiter.ts`), so the cap holds across every gateway and a
 * gateway that dies frees its slots within the budget's `slotTtlMs`. A request never waits for a
 * slot: when every slot is taken it is answered at once.
 *
 * Status of a rejection. RFC 9457 leaves the status to the protocol; draft-ietf-httpapi-ratelimit-
 * headers-11 registers `concurrent-requests` as a quota unit (§3.1.2), so a cap on concurrent
 * requests is a quota policy like a rate, and a client over its own quota is told 429 (RFC 6585:
 * "the user has sent too many requests"). That is the answer for a cap keyed per client (`keyBy`
 * `account` or `host`). A cap keyed by nothing (`single`) is the server's own capacity: the
 * client exceeded nothing, and RFC 9110 §15.6.4 503 "temporary overload" is the honest answer.
 * Both carry `Retry-After` (1 s: a slot is freed by some other response ending, which no one can
 * predict), a `RateLimit-Policy` item with `qu="concurrent-requests"` and no `w` (a cap has no
 * window), and a problem body of its own type, so a client can tell "too many at once" from
 * "too many per second".
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { TOutboundBudget } from "../policy/schemas";
import type { NodeMiddleware } from "./node-middleware";
import { OutboundError, type OutboundLimiter } from "./outbound-limiter";
import { serializeSfList, serializeSfString } from "./structured-fields";

/** The problem type of a concurrency rejection (RFC 9457 `type`). */
export const CONCURRENCY_EXCEEDED_TYPE = "urn:limitplane:problem:concurrency-exceeded";

/** The body of a concurrency rejection. */
export interface ConcurrencyExceededProblem {
  readonly type: typeof CONCURRENCY_EXCEEDED_TYPE;
  readonly title: "Too many concurrent requests";
  readonly status: 429 | 503;
  readonly code: "CONCURRENCY_LIMITED";
  readonly scope: string;
  /** The cap: most requests in flight at once. */
  readonly limit: number;
  readonly retryAfterMs: number;
}

export interface ConcurrencyRejection {
  readonly status: 429 | 503;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: ConcurrencyExceededProblem;
  readonly bodyText: string;
}

/** What a request is answered when every slot of `scope` is taken. */
export function concurrencyRejection(scope: string, budget: TOutboundBudget): ConcurrencyRejection {
  const max = budget.concurrency?.max ?? 0;
  const status = budget.keyBy === "single" ? 503 : 429;
  const body: ConcurrencyExceededProblem = {
    type: CONCURRENCY_EXCEEDED_TYPE,
    title: "Too many concurrent requests",
    status,
    code: "CONCURRENCY_LIMITED",
    scope,
    limit: max,
    retryAfterMs: 1_000,
  };
  return {
    status,
    headers: {
      "RateLimit-Policy": serializeSfList([
        `${serializeSfString(scope)};q=${max};qu="concurrent-requests"`,
      ]),
      "Retry-After": "1",
      "Content-Type": "application/problem+json",
    },
    body,
    bodyText: JSON.stringify(body),
  };
}

export interface ConcurrencyLimitOptions<Request> {
  /** The budget whose slots requests take (`outbound:<name>`, with a `concurrency` cap). */
  readonly scope: string;
  /** The budget's key for a request (the customer's id for a per-customer cap; "" for `single`). */
  readonly key: (request: Request) => string;
}

function checkedBudget(limiter: OutboundLimiter, scope: string): TOutboundBudget {
  const budget = limiter.budgetOf(scope);
  if (budget.concurrency === null) {
    throw new TypeError(`${scope}: a concurrency limit needs a budget with a concurrency cap`);
  }
  return budget;
}

/**
 * Node (`http`, Express, Connect): takes a slot, calls `next`, and frees the slot when the
 * response closes (finished or aborted).
 */
export function createConcurrencyMiddleware(
  limiter: OutboundLimiter,
  options: ConcurrencyLimitOptions<IncomingMessage>,
): NodeMiddleware {
  const budget = checkedBudget(limiter, options.scope);
  const rejection = concurrencyRejection(options.scope, budget);
  return (req: IncomingMessage, res: ServerResponse, next) => {
    let key: string;
    try {
      key = options.key(req);
    } catch (error: unknown) {
      next(error);
      return;
    }
    limiter.acquire(options.scope, { key, maxWaitMs: 0 }).then(
      (permit) => {
        res.once("close", () => {
          void permit.release();
        });
        next();
      },
      (error: unknown) => {
        if (error instanceof OutboundError && error.code === "max-wait") {
          const raw: string[] = ["Content-Length", String(Buffer.byteLength(rejection.bodyText))];
          for (const [name, value] of Object.entries(rejection.headers)) raw.push(name, value);
          res.writeHead(rejection.status, raw);
          res.end(rejection.bodyText);
          return;
        }
        next(error);
      },
    );
  };
}

/**
 * Fetch (`Request` to `Response`: Next.js route handlers, Deno, Bun, workers): takes a slot,
 * runs `handler`, and frees the slot when the response body has been read to its end or
 * cancelled (at once for a response without a body, or when the handler throws).
 */
export function withConcurrencyLimit(
  limiter: OutboundLimiter,
  options: ConcurrencyLimitOptions<Request>,
  handler: (request: Request) => Response | Promise<Response>,
): (request: Request) => Promise<Response> {
  const budget = checkedBudget(limiter, options.scope);
  const rejection = concurrencyRejection(options.scope, budget);
  return async (request) => {
    let permit: Awaited<ReturnType<OutboundLimiter["acquire"]>>;
    try {
      permit = await limiter.acquire(options.scope, { key: options.key(request), maxWaitMs: 0 });
    } catch (error: unknown) {
      if (error instanceof OutboundError && error.code === "max-wait") {
        return new Response(rejection.bodyText, {
          status: rejection.status,
          headers: rejection.headers,
        });
      }
      throw error;
    }
    let response: Response;
    try {
      response = await handler(request);
    } catch (error: unknown) {
      await permit.release();
      throw error;
    }
    if (response.body === null) {
      await permit.release();
      return response;
    }
    const release = () => {
      void permit.release();
    };
    // Freed at the body's end, or when a client that goes away cancels it (release is idempotent).
    const reader = response.body.getReader();
    const tracked = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) {
          release();
          controller.close();
        } else {
          controller.enqueue(value);
        }
      },
      cancel(reason) {
        release();
        return reader.cancel(reason);
      },
    });
    return new Response(tracked, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}
