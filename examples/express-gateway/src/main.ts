/**
 * Starts the example: `npm start -w examples/express-gateway`, against REDIS_URL (default
 * 127.0.0.1:6379) under REDIS_KEY_PREFIX, on PORT (default 4101; 0 picks a free one). With
 * `LIMITPLANE_POLICY=published`, the limits are the ones a Limitplane control plane publishes
 * under that prefix instead of `LIMITS`.
 */
import type { AddressInfo } from "node:net";
import { createEnforcer } from "@limitplane/enforcer";
import { ApiKeys } from "./api-keys.js";
import { createApp } from "./app.js";
import { LIMITS } from "./limits.js";

const enforcer = await createEnforcer({
  expectedGateways: Number(process.env.EXPECTED_GATEWAYS ?? 1),
  redis: {
    url: process.env.REDIS_URL ?? "redis://127.0.0.1:6379/0",
    keyPrefix: process.env.REDIS_KEY_PREFIX ?? "express-example:",
  },
  policy: process.env.LIMITPLANE_POLICY === "published" ? undefined : LIMITS,
});
const apiKeys = new ApiKeys({
  "key-initech": { customerId: "initech", tier: "free" },
  "key-globex": { customerId: "globex", tier: "pro" },
});
const server = createApp({ enforcer, apiKeys }).listen(
  Number(process.env.PORT ?? 4101),
  "127.0.0.1",
  () => {
    const { port } = server.address() as AddressInfo;
    const version = enforcer.status().policy?.version ?? "none yet";
    console.log(`express gateway listening on http://127.0.0.1:${port} (policy ${version})`);
  },
);

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    server.close();
    void enforcer.stop().then(() => process.exit(0));
  });
}
