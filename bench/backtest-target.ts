/**
 * The gateway the backtest benchmark drives for the cost of recording: node:http with one
 * endpoint behind the enforcer (RedisStore, local stage on), with the traffic record on or off.
 *
 *   tsx bench/backtest-target.ts --prefix bench:x: --record on|off [--redis-url redis://...]
 *
 * Prints `listening on <url>`.
 */
import { once } from "node:events";
import { createServer, type IncomingMessage } from "node:http";
import { parseArgs } from "node:util";
import { createEnforcer, createNodeMiddleware } from "@limitplane/enforcer";

const { values } = parseArgs({
  options: {
    prefix: { type: "string", default: "bench:" },
    record: { type: "string", default: "off" },
    "redis-url": { type: "string", default: "redis://127.0.0.1:6379/0" },
  },
});

const enforcer = await createEnforcer({
  expectedGateways: 1,
  redisUrl: values["redis-url"],
  keyPrefix: values.prefix,
  logger: { log() {} },
  ...(values.record === "on"
    ? { recording: { addressHashKey: "bench-traffic-record-key-0123456789" } }
    : {}),
});
if (!enforcer.status().isReady) throw new Error("no policy published under the prefix");
const identify = (req: IncomingMessage) => {
  const customerId = req.headers.authorization?.slice("Bearer ".length);
  return customerId ? { customerId, tier: "enterprise" } : null;
};
const limit = createNodeMiddleware(enforcer, { identify });
const body = JSON.stringify({ ok: true });
const server = createServer((req, res) => {
  if (req.url === "/recorded") {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify(enforcer.recorder?.written ?? null));
    return;
  }
  limit(req, res, () => {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(body);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1");
await once(server, "listening");
const address = server.address();
if (address === null || typeof address === "string") throw new Error("not listening on TCP");
console.log(`listening on http://127.0.0.1:${address.port}`);
process.once("SIGTERM", () => {
  server.close();
  server.closeAllConnections();
  void enforcer.stop().then(() => process.exit(0));
});
