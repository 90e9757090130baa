/**
 * The gateway the backtest benchmark drives for the cost of recording: the enforcer (RedisStore,
 * local stage on) in front of one endpoint (`serve-target.ts`, as the enforcer benchmark's
 * target), with the traffic record on or off. `GET /recorded` answers what the recorder wrote,
 * `GET /cpu` this process's CPU time so far (microseconds).
 *
 *   tsx bench/backtest-target.ts --prefix bench:x: --record on|off [--redis-url redis://...]
 *
 * Prints `listening on <url>`.
 */
import { parseArgs } from "node:util";
import { createEnforcer, createNodeMiddleware } from "@limitplane/enforcer";
import { customerOf, serveTarget } from "./serve-target";

const { values } = parseArgs({
  options: {
    prefix: { type: "string", default: "bench:" },
    record: { type: "string", default: "off" },
    "redis-url": { type: "string", default: "redis://127.0.0.1:6379/0" },
  },
});

const enforcer = await createEnforcer({
  expectedGateways: 1,
  redis: { url: values["redis-url"], keyPrefix: values.prefix },
  logger: { log() {} },
  ...(values.record === "on"
    ? { recording: { addressHashKey: "bench-traffic-record-key-0123456789" } }
    : {}),
});
if (!enforcer.status().isReady) throw new Error("no policy published under the prefix");
await serveTarget({
  middleware: createNodeMiddleware(enforcer, { identify: customerOf }),
  stop: () => enforcer.stop(),
  routes: new Map([
    [
      "/cpu",
      {
        contentType: "application/json",
        body: () => {
          const usage = process.cpuUsage();
          return JSON.stringify({ micros: usage.user + usage.system });
        },
      },
    ],
    [
      "/recorded",
      {
        contentType: "application/json",
        body: () => JSON.stringify(enforcer.recorder?.written ?? null),
      },
    ],
  ]),
});
