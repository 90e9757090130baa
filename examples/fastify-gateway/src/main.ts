/**
 * Starts the example: `npm start -w examples/fastify-gateway`, against REDIS_URL (default
 * 127.0.0.1:6379) under REDIS_KEY_PREFIX, on PORT (default 4102; 0 picks a free one).
 */
import { createEnforcer } from "@limitplane/enforcer";
import { buildApp } from "./app.js";
import { LIMITS } from "./limits.js";

const enforcer = await createEnforcer({
  expectedGateways: Number(process.env.EXPECTED_GATEWAYS ?? 1),
  redis: {
    url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379/0",
    keyPrefix: process.env.REDIS_KEY_PREFIX ?? "fastify-example:",
  },
  policy: LIMITS,
});
const app = buildApp({ enforcer, apiKeys: new Map([["key-umbrella", "umbrella"]]) });
const url = await app.listen({ host: "127.0.0.1", port: Number(process.env.PORT ?? 4102) });
console.log(`fastify gateway listening on ${url}`);

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    void app
      .close()
      .then(() => enforcer.stop())
      .then(() => process.exit(0));
  });
}
