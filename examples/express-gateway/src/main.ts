/**
 * Starts the example: `npm start -w examples/express-gateway`, with the same Redis as the
 * control plane (REDIS_URL, REDIS_KEY_PREFIX) and PORT (default 4101).
 */
import { createEnforcer } from "@limitplane/enforcer";
import { ApiKeys } from "./api-keys";
import { createApp } from "./app";

const enforcer = await createEnforcer({
  redisUrl: process.env.REDIS_URL ?? "redis://127.0.0.1:6379/0",
  keyPrefix: process.env.REDIS_KEY_PREFIX ?? "lp:",
  expectedGateways: Number(process.env.EXPECTED_GATEWAYS ?? 1),
});
const apiKeys = new ApiKeys({
  "key-initech": { customerId: "initech", tier: "free" },
  "key-globex": { customerId: "globex", tier: "pro" },
});
const port = Number(process.env.PORT ?? 4101);
const server = createApp({ enforcer, apiKeys }).listen(port, "127.0.0.1", () => {
  console.log(
    `express gateway on http://127.0.0.1:${port} (policy ${enforcer.status().policy?.version ?? "none yet"})`,
  );
});

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    server.close();
    void enforcer.stop().then(() => process.exit(0));
  });
}
