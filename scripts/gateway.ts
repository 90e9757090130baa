/**
 * The demo gateway: a real node:http server with sample endpoints of different cost, protected by
 * the enforcer through the Node middleware. Run as many copies as you like on different ports:
 *
 *   npm run gateway -- --port 4001
 *   npm run gateway -- --port 4002 --expected-gateways 2
 *
 * Identification (a demo: there is no credential check): `Authorization: Bearer <customerId>` or
 * `x-customer-id: <customerId>`, and the tier in `x-tier` (absent: the policy's default tier).
 * Neither header: anonymous, keyed by the TCP peer address, or with `--trust-proxy <n>` by the
 * n-th `X-Forwarded-For` entry from the right (only behind n proxies you run: a client can write
 * that header). A malformed customer id is a 401.
 *
 * | Endpoint | Endpoint class (example policy) | Cost |
 * | --- | --- | --- |
 * | `GET /v1/things`, `GET /v1/things/<id>` | default | 1 |
 * | `GET /v1/search` | search | 2 |
 * | `GET /v1/reports/<id>`, `POST /v1/reports` | reports | 10 |
 * | `POST /v1/auth/sign-in` | sign-in (anonymous: by address and route) | 1 |
 * | `GET /metrics` | not limited: Prometheus text | - |
 * | `GET /healthz` | not limited: the enforcer's status; 503 until a policy is in force | - |
 *
 * Reads REDIS_URL, REDIS_CLUSTER_NODES (a Redis Cluster), REDIS_SENTINELS and REDIS_SENTINEL_*
 * (a Redis behind Sentinel) and REDIS_KEY_PREFIX from the environment.
 * `--timeout-ms` is when a late store answer makes it look at the connection (50), `--max-wait-ms`
 * the longest it waits for a connected but slow Redis (1000). Prints one line on stdout when it
 * listens: `gateway <id> listening on http://<host>:<port> policy=<version|none>`.
 * `--record` keeps the traffic record for backtests (docs/traffic-record.md): address hashes
 * keyed by TRAFFIC_RECORD_SECRET, subjects sampled at `--record-sample-rate` (default
 * TRAFFIC_RECORD_SAMPLE_RATE, 1). `--no-leases` asks Redis for every admission (docs/redis-store.md,
 * "Leases"). `--policy-cache <file>` keeps the last good policy in that file and enforces it when
 * Redis gives none at start (docs/embedding.md, "The last good policy on disk"); `npm run up`
 * passes one under its data directory.
 */
import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { parseArgs } from "node:util";
import {
  createEnforcer,
  createNodeMiddleware,
  type EnforcerOptions,
  type Identity,
} from "@limitplane/enforcer";
import { MemoryStore } from "@limitplane/enforcer/limiter";
import { isCustomerId } from "@limitplane/enforcer/policy";
import { loadEnv, redisTargetOf, requireTrafficRecordSecret } from "@/lib/server/env";
import { applyServerLimits, serverLimitOptions } from "@/lib/server/server-limits";
import { readConfigOrExit } from "@/lib/server/startup-check";

const { values } = parseArgs({
  options: {
    port: { type: "string", default: "4001" },
    host: { type: "string", default: "127.0.0.1" },
    "expected-gateways": { type: "string", default: "3" },
    id: { type: "string" },
    "timeout-ms": { type: "string" },
    "max-wait-ms": { type: "string" },
    "poll-interval-ms": { type: "string" },
    "no-local-stage": { type: "boolean", default: false },
    "no-leases": { type: "boolean", default: false },
    "trust-proxy": { type: "string", default: "0" },
    memory: { type: "boolean", default: false },
    record: { type: "boolean", default: false },
    "record-sample-rate": { type: "string" },
    "policy-cache": { type: "string" },
  },
});

function wholeNumber(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0) {
    console.error(`--${name} must be a whole number, got ${JSON.stringify(text)}`);
    process.exit(2);
  }
  return value;
}

const port = wholeNumber("port", values.port) ?? 4001;
const expectedGateways = wholeNumber("expected-gateways", values["expected-gateways"]) ?? 3;

/** The caller as the demo identifies it; `invalid` when a customer id was sent but malformed. */
function identifyDemo(req: IncomingMessage): Identity | null | "invalid" {
  const authorization = req.headers.authorization;
  const bearer = authorization?.match(/^Bearer\s+(\S+)$/i)?.[1];
  const header = req.headers["x-customer-id"];
  const customerId = bearer ?? (typeof header === "string" ? header : undefined);
  if (customerId === undefined) return null;
  if (!isCustomerId(customerId)) return "invalid";
  const tier = req.headers["x-tier"];
  return { customerId, tier: typeof tier === "string" ? tier : null };
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "Content-Type": "application/json",
    "Content-Length": String(Buffer.byteLength(text)),
  });
  res.end(text);
}

/** The protected application: what would sit behind a real gateway. */
function route(req: IncomingMessage, res: ServerResponse, identity: Identity | null): void {
  const path = (req.url ?? "/").split("?")[0] ?? "/";
  const method = req.method ?? "GET";
  const customerId = identity?.customerId ?? null;
  if (method === "GET" && /^\/v1\/things(\/[^/]+)?\/?$/.test(path)) {
    sendJson(res, 200, { endpoint: "things", customerId });
  } else if (method === "GET" && path === "/v1/search") {
    sendJson(res, 200, { endpoint: "search", customerId, results: [] });
  } else if (
    (method === "GET" && /^\/v1\/reports\/[^/]+$/.test(path)) ||
    (method === "POST" && path === "/v1/reports")
  ) {
    sendJson(res, 200, { endpoint: "reports", customerId });
  } else if (method === "POST" && path === "/v1/auth/sign-in") {
    sendJson(res, 200, { endpoint: "sign-in", token: "demo" });
  } else {
    sendJson(res, 404, { code: "NOT_FOUND" });
  }
}

const storeOption: Pick<EnforcerOptions, "store"> = values.memory
  ? { store: () => new MemoryStore() }
  : {};

const env = readConfigOrExit(loadEnv);
const recording = readConfigOrExit(recordingOption);
const enforcer = await createEnforcer({
  redis: { ...redisTargetOf(env), keyPrefix: env.REDIS_KEY_PREFIX },
  expectedGateways,
  enforcerId: values.id ?? `gateway-${process.pid}`,
  timeouts: {
    storeCallMs: wholeNumber("timeout-ms", values["timeout-ms"]),
    maxWaitMs: wholeNumber("max-wait-ms", values["max-wait-ms"]),
  },
  controlPlane: {
    pollIntervalMs: wholeNumber("poll-interval-ms", values["poll-interval-ms"]),
    ...(values["policy-cache"] === undefined
      ? {}
      : { policyCache: { path: values["policy-cache"] } }),
  },
  local: values["no-local-stage"] ? false : {},
  leases: values["no-leases"] ? false : {},
  ...storeOption,
  ...recording,
});

function recordingOption(): Pick<EnforcerOptions, "recording"> {
  if (!values.record) return {};
  const text = values["record-sample-rate"];
  const sampleRate = text === undefined ? env.TRAFFIC_RECORD_SAMPLE_RATE : Number(text);
  if (!(sampleRate > 0 && sampleRate <= 1)) {
    console.error(
      `--record-sample-rate must be more than 0 and at most 1, got ${JSON.stringify(text)}`,
    );
    process.exit(2);
  }
  return { recording: { addressHashKey: requireTrafficRecordSecret(env), sampleRate } };
}

const identities = new WeakMap<IncomingMessage, Identity | null>();
const limit = createNodeMiddleware(enforcer, {
  identify: (req) => identities.get(req) ?? null,
  trustProxy: wholeNumber("trust-proxy", values["trust-proxy"]) ?? 0,
});

const server = createServer(serverLimitOptions(30_000), (req, res) => {
  req.resume();
  const path = (req.url ?? "/").split("?")[0];
  if (req.method === "GET" && path === "/metrics") {
    const text = enforcer.prometheus();
    res.writeHead(200, { "Content-Type": "text/plain; version=0.0.4; charset=utf-8" });
    res.end(text);
    return;
  }
  if (req.method === "GET" && path === "/healthz") {
    const status = enforcer.status();
    sendJson(res, status.isReady ? 200 : 503, status);
    return;
  }
  const identity = identifyDemo(req);
  if (identity === "invalid") {
    sendJson(res, 401, { code: "UNAUTHENTICATED", message: "malformed customer id" });
    return;
  }
  identities.set(req, identity);
  limit(req, res, (error?: unknown) => {
    if (error !== undefined) {
      console.error(error);
      sendJson(res, 500, { code: "INTERNAL" });
      return;
    }
    route(req, res, identity);
  });
});
applyServerLimits(server);
server.listen(port, values.host);
await once(server, "listening");
const address = server.address();
if (address === null || typeof address === "string") throw new Error("not listening on TCP");
const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
console.log(
  `gateway ${enforcer.enforcerId} listening on http://${host}:${address.port} policy=${
    enforcer.status().policy?.version ?? "none"
  }${enforcer.status().policy?.via === "cache" ? " (cached)" : ""}`,
);

async function shutdown(): Promise<void> {
  server.close();
  server.closeAllConnections();
  await enforcer.stop();
  process.exit(0);
}
process.once("SIGTERM", () => void shutdown());
process.once("SIGINT", () => void shutdown());
