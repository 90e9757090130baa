/**
 * Starts the example: `npm start -w examples/hono-gateway`, against REDIS_URL (default
 * 127.0.0.1:6379) under REDIS_KEY_PREFIX, on PORT (default 4103; 0 picks a free one).
 */
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { createEnforcer } from "@limitplane/enforcer";
import { createApp } from "./app.js";
import { LIMITS } from "./limits.js";

const enforcer = await createEnforcer({
  expectedGateways: Number(process.env.EXPECTED_GATEWAYS ?? 1),
  redis: {
    url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379/0",
    keyPrefix: process.env.REDIS_KEY_PREFIX ?? "hono-example:",
  },
  policy: LIMITS,
});
const app = createApp({
  enforcer,
  accounts: new Map([["token-initech", { customerId: "initech", tier: "basic" }]]),
});
const server = serve(
  { fetch: app.fetch, hostname: "127.0.0.1", port: Number(process.env.PORT ?? 4103) },
  (info: AddressInfo) => {
    console.log(`hono gateway listening on http://127.0.0.1:${info.port}`);
  },
);

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    server.close();
    void enforcer.stop().then(() => process.exit(0));
  });
}
