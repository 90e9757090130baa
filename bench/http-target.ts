/**
 * The server the enforcer benchmark drives from another process: node:http with one endpoint,
 * protected by one of
 *
 * - `limitplane`: the enforcer (RedisStore, local stage and leases on: the defaults) through `createNodeMiddleware`;
 * - `limitplane-no-local`: the same without the local first stage;
 * - `flexible`: rate-limiter-flexible's `RateLimiterRedis` at its best documented configuration
 *   and doing the work ours does: an ioredis client with `enableAutoPipelining`, one limiter per
 *   check ours makes (the customer's tier, then the per-customer ceiling, chained),
 *   `inMemoryBlockOnConsumed` on both (ours has its local stage on), headers from the result and
 *   a 429 problem body on rejection, the way its README wires Express;
 * - `flexible-no-block`: the same without `inMemoryBlockOnConsumed` (to compare with
 *   `limitplane-no-local`);
 * - `bare`: nothing (the HTTP server's own ceiling on this machine);
 * - `bare-429`: no limiter, every request answered with the 429 the enforcer gives a tight
 *   customer (the same status, headers and body size), written as the enforcer's Node middleware
 *   writes one: the floor of a rejection flood, since a 429 is a larger write than a 200;
 * - `identify-429`: the same after reading the identity headers;
 * - `enforcer-429`: the same, in a process where an enforcer (as `limitplane` makes it) is started,
 *   connected and following the policy, but never consulted: what a running enforcer costs the
 *   process's other requests (its timers, connections and code), apart from deciding.
 *
 *   tsx bench/http-target.ts --mode limitplane --prefix bench:x: [--redis-url redis://...]
 *
 * Customers come as `Authorization: Bearer <id>` and `x-tier` (`wide`: never limited at these
 * rates; `tight`: ten requests per day). Prints `listening on <url>`.
 * `GET /metrics` (not limited) answers the enforcer's Prometheus text in the limitplane modes, so
 * the benchmark can count the decisions made without Redis during its run.
 */
import { parseArgs } from "node:util";
import { createEnforcer, createNodeMiddleware, type EnforcerLogger } from "@limitplane/enforcer";
import { redisOptionsFor } from "@limitplane/enforcer/publication";
import { Redis } from "ioredis";
import { RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import { BENCH_LIMITS } from "./http-policy";
import { customerOf, type Middleware, serveTarget } from "./serve-target";

const silentLogger: EnforcerLogger = { log() {} };

const { values } = parseArgs({
  options: {
    mode: { type: "string", default: "limitplane" },
    prefix: { type: "string", default: "bench:" },
    "redis-url": { type: "string", default: "redis://127.0.0.1:6379/0" },
  },
});
const mode = values.mode;
const prefix = values.prefix;
const redisUrl = values["redis-url"];

/**
 * The enforcer's 429 for a tight customer of the bench's policy (`http-policy.ts`), as its Node
 * middleware writes it: the body with a `retryAfterMs` of the same length, and Node's flat list of
 * headers, `Content-Length` first.
 */
const BARE_429_BODY = JSON.stringify({
  type: "https://iana.org/assignments/http-problem-types#quota-exceeded",
  title: "Quota exceeded",
  status: 429,
  "violated-policies": ["tier:tight"],
  code: "RATE_LIMITED",
  scope: "tier:tight",
  retryAfterMs: 8_639_992,
});
const BARE_429_HEADERS = [
  "Content-Length",
  String(Buffer.byteLength(BARE_429_BODY)),
  "RateLimit-Policy",
  `"tier:tight";q=${BENCH_LIMITS.tightPerDay};w=86400, "ceiling";q=${BENCH_LIMITS.widePerSec};w=1`,
  "RateLimit",
  '"tier:tight";r=0;t=8640',
  "X-RateLimit-Limit",
  String(BENCH_LIMITS.tightPerDay),
  "X-RateLimit-Remaining",
  "0",
  "X-RateLimit-Reset",
  "86400",
  "Retry-After",
  "8640",
  "Content-Type",
  "application/problem+json",
];

interface Target {
  readonly middleware: Middleware;
  readonly stop: () => Promise<void>;
  /** The enforcer's Prometheus text; absent for the other modes. */
  readonly metrics?: () => string;
}

async function makeMiddleware(): Promise<Target> {
  switch (mode) {
    case "limitplane":
    case "limitplane-no-local": {
      const enforcer = await createEnforcer({
        expectedGateways: 1,
        redis: { url: redisUrl, keyPrefix: prefix },
        local: mode === "limitplane" ? {} : false,
        logger: silentLogger,
      });
      if (!enforcer.status().isReady) throw new Error("no policy published under the prefix");
      return {
        middleware: createNodeMiddleware(enforcer, { identify: customerOf }),
        stop: () => enforcer.stop(),
        metrics: () => enforcer.prometheus(),
      };
    }
    case "flexible":
    case "flexible-no-block": {
      const client = new Redis(redisUrl, {
        ...redisOptionsFor("decisions"),
        enableAutoPipelining: true,
      });
      const isBlocking = mode === "flexible";
      const limiter = (name: string, points: number, duration: number) =>
        new RateLimiterRedis({
          storeClient: client,
          keyPrefix: `${prefix}rlflx:${name}`,
          points,
          duration,
          // Blocks a key in process once it has consumed more than its points, until its reset.
          ...(isBlocking ? { inMemoryBlockOnConsumed: points + 1 } : {}),
        });
      const tiers = new Map([
        ["wide", limiter("wide", BENCH_LIMITS.widePerSec, 1)],
        ["tight", limiter("tight", BENCH_LIMITS.tightPerDay, 86_400)],
      ]);
      const wide = tiers.get("wide") as RateLimiterRedis;
      const ceiling = limiter("ceiling", BENCH_LIMITS.widePerSec, 1);
      const decide = async (key: string, tier: RateLimiterRedis) => {
        const account = await tier.consume(key);
        await ceiling.consume(key);
        return account;
      };
      return {
        middleware: (req, res, next) => {
          const customer = customerOf(req);
          const key = customer?.customerId ?? req.socket.remoteAddress ?? "unknown";
          const tier = tiers.get(customer?.tier ?? "wide") ?? wide;
          decide(key, tier).then(
            (result) => {
              res.setHeader("X-RateLimit-Limit", String(tier.points));
              res.setHeader("X-RateLimit-Remaining", String(result.remainingPoints));
              res.setHeader("X-RateLimit-Reset", String(Math.ceil(result.msBeforeNext / 1000)));
              next();
            },
            (rejection: unknown) => {
              if (rejection instanceof RateLimiterRes) {
                const body = JSON.stringify({
                  type: "https://iana.org/assignments/http-problem-types#quota-exceeded",
                  title: "Quota exceeded",
                  status: 429,
                  "violated-policies": ["account"],
                  code: "RATE_LIMITED",
                  scope: "account",
                  retryAfterMs: rejection.msBeforeNext,
                });
                res.writeHead(429, {
                  "Retry-After": String(Math.ceil(rejection.msBeforeNext / 1000)),
                  "X-RateLimit-Limit": String(tier.points),
                  "X-RateLimit-Remaining": "0",
                  "Content-Type": "application/problem+json",
                  "Content-Length": String(Buffer.byteLength(body)),
                });
                res.end(body);
              } else {
                res.writeHead(500).end();
              }
            },
          );
        },
        stop: async () => {
          client.disconnect();
        },
      };
    }
    case "bare":
      return { middleware: (_req, _res, next) => next(), stop: async () => {} };
    case "enforcer-429": {
      const enforcer = await createEnforcer({
        expectedGateways: 1,
        redis: { url: redisUrl, keyPrefix: prefix },
        local: {},
        logger: silentLogger,
      });
      if (!enforcer.status().isReady) throw new Error("no policy published under the prefix");
      return {
        middleware: (_req, res) => {
          res.writeHead(429, BARE_429_HEADERS);
          res.end(BARE_429_BODY);
        },
        stop: () => enforcer.stop(),
      };
    }
    case "bare-429":
      return {
        middleware: (_req, res) => {
          res.writeHead(429, BARE_429_HEADERS);
          res.end(BARE_429_BODY);
        },
        stop: async () => {},
      };
    case "identify-429":
      // The floor of any limiter's rejection: it must read who is asking (the headers object
      // Node builds on first access) before it can answer the same 429.
      return {
        middleware: (req, res) => {
          res.writeHead(customerOf(req) === null ? 401 : 429, BARE_429_HEADERS);
          res.end(BARE_429_BODY);
        },
        stop: async () => {},
      };
    default:
      throw new Error(`unknown --mode ${mode}`);
  }
}

const { middleware, stop, metrics } = await makeMiddleware();
await serveTarget({
  middleware,
  stop,
  routes:
    metrics === undefined
      ? new Map()
      : new Map([["/metrics", { contentType: "text/plain; version=0.0.4", body: metrics }]]),
});
