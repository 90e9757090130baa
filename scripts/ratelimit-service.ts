/**
 * The rate-limit service for gateways that are not Node: Envoy (RLS v3 over gRPC), nginx
 * (`auth_request`), Traefik (ForwardAuth) and Caddy (`forward_auth`). docs/ratelimit-service.md
 * has the configuration of each.
 *
 *   RATELIMIT_SERVICE_SECRET=... RATELIMIT_SERVICE_GRPC_PLAINTEXT=true npm run ratelimit-service
 *
 * Redis and the key prefix come from REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS and
 * REDIS_SENTINEL_* (docs/failover.md), and REDIS_KEY_PREFIX, as for every gateway; the service's
 * own settings from RATELIMIT_SERVICE_* (`service-config.ts`). The last good policy is kept in
 * RATELIMIT_SERVICE_POLICY_CACHE (default `.limitplane/policy-cache/ratelimit-service.lpcache`, or
 * `off`) and enforced when Redis gives none at start (docs/ratelimit-service.md).
 * `--id` names it in the console's fleet, `--expected-gateways` is how many replicas share the
 * budgets (it sizes leases). The outbound budgets' routes keep their turns and slots under
 * `<REDIS_KEY_PREFIX>callers:`, where a Node caller sharing them puts its limiter's `keyPrefix`. Prints one line on stdout when it listens:
 * `ratelimit-service <id> listening on grpc://<host>:<port> http=<url> policy=<version|none>`.
 */
import { mkdirSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { createEnforcer } from "@limitplane/enforcer";
import { createOutboundLimiter } from "@limitplane/enforcer/callers";
import { startRateLimitService } from "@/lib/ratelimit-service/ratelimit-service";
import { loadServiceConfig, ServiceConfigError } from "@/lib/ratelimit-service/service-config";
import { loadEnv, redisTargetOf } from "@/lib/server/env";
import { createRedis } from "@/lib/server/redis";
import { readConfigOrExit } from "@/lib/server/startup-check";

const { values } = parseArgs({
  options: {
    id: { type: "string" },
    "expected-gateways": { type: "string", default: "3" },
    "no-leases": { type: "boolean", default: false },
  },
});

const expectedGateways = Number(values["expected-gateways"]);
if (!(Number.isInteger(expectedGateways) && expectedGateways >= 1)) {
  console.error(
    `--expected-gateways must be a whole number from 1, got ${values["expected-gateways"]}`,
  );
  process.exit(2);
}

let config: ReturnType<typeof loadServiceConfig>;
try {
  config = loadServiceConfig(process.env);
} catch (error: unknown) {
  if (!(error instanceof ServiceConfigError)) throw error;
  console.error(`ratelimit-service: ${error.message}`);
  process.exit(2);
}

const env = readConfigOrExit(loadEnv);
const policyCachePath = config.policyCachePath;
if (policyCachePath !== null) {
  try {
    mkdirSync(path.dirname(policyCachePath), { recursive: true });
  } catch (error: unknown) {
    const reason = error instanceof Error ? error.message : String(error);
    console.error(
      `ratelimit-service: RATELIMIT_SERVICE_POLICY_CACHE: cannot create the directory of ${policyCachePath}: ${reason} (set it to a writable path, or to off)`,
    );
    process.exit(2);
  }
}
const enforcer = await createEnforcer({
  redis: { ...redisTargetOf(env), keyPrefix: env.REDIS_KEY_PREFIX },
  expectedGateways,
  enforcerId: values.id ?? `ratelimit-service-${process.pid}`,
  leases: values["no-leases"] ? false : {},
  ...(policyCachePath === null ? {} : { controlPlane: { policyCache: { path: policyCachePath } } }),
});

// Turns and slots are one Redis call each; the decisions role's short timeouts fit them.
const outboundRedis = createRedis("decisions");
const outbound = createOutboundLimiter({
  client: outboundRedis,
  keyPrefix: `${env.REDIS_KEY_PREFIX}callers:`,
  policy: enforcer,
  // Counted for the budgets' console charts, in the installation's per-minute hashes.
  metrics: { keyPrefix: env.REDIS_KEY_PREFIX },
});

const service = await startRateLimitService({
  config,
  enforcer,
  outbound,
  logError: (message, error) => {
    console.error(
      JSON.stringify({
        level: "error",
        message,
        enforcerId: enforcer.enforcerId,
        error: error instanceof Error ? (error.stack ?? error.message) : String(error),
      }),
    );
  },
});

const grpcHost = config.host.includes(":") ? `[${config.host}]` : config.host;
console.log(
  `ratelimit-service ${enforcer.enforcerId} listening on grpc://${grpcHost}:${service.grpcPort} http=${service.httpUrl} policy=${
    enforcer.status().policy?.version ?? "none"
  }`,
);

let isStopping = false;
async function shutdown(): Promise<void> {
  if (isStopping) return;
  isStopping = true;
  await service.stop();
  await outbound.flush().catch(() => {});
  outboundRedis.disconnect();
  process.exit(0);
}
process.once("SIGTERM", () => void shutdown());
process.once("SIGINT", () => void shutdown());
