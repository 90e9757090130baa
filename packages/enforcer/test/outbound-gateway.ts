/**
 * A gateway process for outbound-concurrency.test.ts: an HTTP server that caps requests in flight
 * per customer (header `x-customer`) with the concurrency middleware, then forwards each request
 * to the upstream. It prints `listening <port>` once it serves.
 *
 * Environment: REDIS_URL, KEY_PREFIX, UPSTREAM_URL.
 */
import { once } from "node:events";
import { createServer } from "node:http";
import { Redis } from "ioredis";
import { createConcurrencyMiddleware } from "../src/enforcer/concurrency-middleware";
import { createOutboundLimiter } from "../src/enforcer/outbound-limiter";
import { GATEWAY_BUDGET } from "./support/outbound";

function env(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === "") throw new Error(`${name} is required`);
  return value;
}

const redis = new Redis(env("REDIS_URL"), { maxRetriesPerRequest: 1 });
const upstream = env("UPSTREAM_URL");
const limiter = createOutboundLimiter({
  client: redis,
  keyPrefix: env("KEY_PREFIX"),
  budgets: [GATEWAY_BUDGET],
});
const capped = createConcurrencyMiddleware(limiter, {
  scope: "outbound:api",
  key: (req) => String(req.headers["x-customer"] ?? ""),
});

const server = createServer((req, res) => {
  capped(req, res, (error?: unknown) => {
    if (error !== undefined) {
      res.writeHead(500).end(String(error));
      return;
    }
    fetch(`${upstream}${req.url ?? "/"}`).then(
      async (response) => {
        const text = await response.text();
        res.writeHead(response.status, { "content-type": "text/plain" }).end(text);
      },
      (failure: unknown) => res.writeHead(502).end(String(failure)),
    );
  });
});
await redis.ping();
server.listen(0, "127.0.0.1");
await once(server, "listening");
const address = server.address();
if (address === null || typeof address === "string") throw new Error("no TCP address");
process.stdout.write(`listening ${address.port}\n`);
