/**
 * Three rate-limit service processes on one Redis, called as Envoy calls them (a client built from
 * Envoy's protos) and as Traefik and Caddy call forward-auth; policy changes made through the
 * control plane's services; a fourth process with mutual TLS and no policy yet, for the health
 * service and the certificates. Waits for what can be observed, never a fixed time.
 */
import { readFileSync } from "node:fs";
import { request as httpsRequest } from "node:https";
import * as grpc from "@grpc/grpc-js";
import {
  checkRateLimitContract,
  publishTestSnapshot,
  tokenBucket,
} from "@limitplane/enforcer/testing";
import { service as healthService } from "grpc-health-check";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { ControlDeps } from "@/lib/control/deps";
import { raiseIncident } from "@/lib/control/incident/raise-incident";
import { getTier } from "@/lib/control/tier/get-tier";
import { updateTier } from "@/lib/control/tier/update-tier";
import { systemClock } from "@/lib/server/composition";
import { createRedis } from "@/lib/server/redis";
import { filePrefix, promSample, waitFor } from "./helpers/gateway-processes";
import { importExamplePolicy, operatorContext } from "./helpers/policy-fixtures";
import {
  customerRequest,
  makeTestCertificates,
  type RlsClient,
  type RlsReply,
  replyHeaders,
  rlsClient,
  type ServiceProcess,
  startService,
  TEST_SECRET,
  type TestCertificates,
  waitForReady,
} from "./helpers/ratelimit-service-processes";
import { snapshotVersion } from "./helpers/snapshots";
import { provideTestDatabase } from "./helpers/test-database";

const database = provideTestDatabase();
const prefix = filePrefix("rl");
const tlsPrefix = filePrefix("rt");
let redis: Redis;
let deps: ControlDeps;
let services: ServiceProcess[] = [];
let clients: RlsClient[] = [];
let tlsService: ServiceProcess;
let certs: TestCertificates;

async function serviceVersion(service: ServiceProcess): Promise<number | null> {
  const status = (await (await fetch(`${service.httpUrl}/healthz`)).json()) as {
    policy: { version: number } | null;
  };
  return status.policy?.version ?? null;
}

async function waitForVersion(version: number): Promise<void> {
  await waitFor(`every service to apply version ${version}`, async () =>
    (await Promise.all(services.map(serviceVersion))).every((v) => v === version)
      ? true
      : undefined,
  );
}

async function setFreeTier(limit: ReturnType<typeof tokenBucket>): Promise<void> {
  const free = await getTier("free", deps);
  const receipt = await updateTier(
    { name: "free", expectedVersion: free.version, limit },
    operatorContext("free tier for the service tests"),
    deps,
  );
  if (receipt.policyVersion === null) throw new Error("no new version");
  await waitForVersion(receipt.policyVersion);
}

async function redisNowMs(): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Number(micros) / 1000;
}

function clientAt(index: number): RlsClient {
  const client = clients[index % clients.length];
  if (client === undefined) throw new Error("no clients");
  return client;
}

/** `count` simultaneous calls for one customer over the three replicas, and Redis's span. */
async function burst(count: number, customerId: string) {
  const startedMs = await redisNowMs();
  const replies = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      clientAt(i).shouldRateLimit(customerRequest(customerId, "free")),
    ),
  );
  const spanMs = (await redisNowMs()) - startedMs;
  const ok = replies.filter((reply) => reply.overall_code === "OK").length;
  const over = replies.filter((reply) => reply.overall_code === "OVER_LIMIT");
  return { replies, spanMs, ok, over };
}

/** The 429 Envoy would send for an OVER_LIMIT reply meets the same contract as a gateway's. */
function checkOverLimit(reply: RlsReply): void {
  const headers = replyHeaders(reply);
  expect(headers["content-type"]).toBe("application/problem+json");
  const { problem } = checkRateLimitContract({
    status: 429,
    header: (name) => headers[name],
    bodyText: reply.raw_body.toString("utf8"),
  });
  expect(problem).toMatchObject({ code: "RATE_LIMITED", scope: "tier:free" });
  expect(reply.statuses[0]).toMatchObject({
    code: "OVER_LIMIT",
    current_limit: { name: "tier:free" },
  });
}

beforeAll(async () => {
  redis = createRedis("control", { url: inject("redisUrl") });
  const db = database.current().db;
  deps = { db, publisher: { db, redis, prefix, clock: systemClock }, clock: systemClock };
  certs = makeTestCertificates();
  await importExamplePolicy(deps);
  [services, tlsService] = await Promise.all([
    Promise.all(
      [1, 2, 3].map((n) =>
        startService({ prefix, id: `rls-${n}`, args: ["--expected-gateways", "3"] }),
      ),
    ),
    startService({
      prefix: tlsPrefix,
      id: "rls-mtls",
      env: {
        RATELIMIT_SERVICE_GRPC_PLAINTEXT: "false",
        RATELIMIT_SERVICE_TLS_CERT: certs.serverCert,
        RATELIMIT_SERVICE_TLS_KEY: certs.serverKey,
        RATELIMIT_SERVICE_TLS_CLIENT_CA: certs.ca,
        RATELIMIT_SERVICE_SECRET: "",
      },
    }),
  ]);
  await Promise.all(services.map(waitForReady));
  clients = services.map((service) => rlsClient(service.grpcAddress));
});

afterAll(async () => {
  for (const client of clients) client.close();
  await Promise.all([...services, tlsService].map((service) => service?.stop()));
  redis.disconnect();
});

describe("ShouldRateLimit on three replicas, one budget per key", () => {
  it("the worked example with a refill too slow to matter: 25 at once give exactly 20 OK and 5 OVER_LIMIT, each with the 429 contract", async () => {
    await setFreeTier(tokenBucket(20, 0.001));
    await Promise.all(
      Array.from({ length: 9 }, (_, i) =>
        clientAt(i).shouldRateLimit(customerRequest("warm", "pro")),
      ),
    );
    const { ok, over } = await burst(25, "slow-1");
    expect(ok).toBe(20);
    expect(over).toHaveLength(5);
    for (const reply of over) checkOverLimit(reply);
  });

  it("hits_addend charges its cost (0 means 1)", async () => {
    const call = (hits: number) =>
      clientAt(hits).shouldRateLimit(customerRequest("cost-1", "free", hits));
    expect((await call(15)).overall_code).toBe("OK");
    expect((await call(10)).overall_code).toBe("OVER_LIMIT");
    expect((await call(5)).overall_code).toBe("OK");
    expect((await call(0)).overall_code).toBe("OVER_LIMIT");
  });

  it("at 10/s: 20 plus at most what refilled over the span Redis measured", async () => {
    await setFreeTier(tokenBucket(20, 10));
    const { ok, over, spanMs } = await burst(25, "fast-1");
    expect(ok).toBeGreaterThanOrEqual(20);
    expect(ok).toBeLessThanOrEqual(20 + Math.floor((spanMs * 10) / 1000));
    expect(ok + over.length).toBe(25);
    for (const reply of over) checkOverLimit(reply);
  });

  it("an incident raised through the control plane reaches the replicas and changes their answers, with no restart", async () => {
    const receipt = await raiseIncident(
      { customerId: "initech", factor: 4, durationMs: 600_000 },
      operatorContext("initech backfill after their outage"),
      deps,
    );
    if (receipt.policyVersion === null) throw new Error("no new version");
    await waitForVersion(receipt.policyVersion);
    const { ok, replies } = await burst(25, "initech");
    expect(ok).toBe(25);
    expect(replyHeaders(replies[0] as RlsReply)["ratelimit-policy"]).toContain(
      `"incident:${receipt.incident.id}";q=80;`,
    );
  });

  it("descriptors the mapping does not cover are answered OK, spend nothing, and are counted by their keys", async () => {
    const reply = await clientAt(0).shouldRateLimit({
      domain: "edge",
      descriptors: [{ entries: [{ key: "generic_key", value: "checkout" }] }],
    });
    expect(reply.overall_code).toBe("OK");
    expect(reply.statuses).toEqual([
      {
        code: "OK",
        current_limit: null,
        limit_remaining: 0,
        duration_until_reset: null,
        quota: null,
      },
    ]);
    const metrics = await (await fetch(`${services[0]?.httpUrl}/metrics`)).text();
    expect(
      promSample(metrics, "limitplane_service_uncovered_descriptors_total", {
        domain: "edge",
        keys: "generic_key",
      }),
    ).toBe(1);
    expect(metrics).toContain("limitplane_decisions_total");
  });
});

describe("hostile input gets INVALID_ARGUMENT naming the field, and no crash", () => {
  const entries = [{ key: "customer_id", value: "hostile" }];
  it.each([
    ["a missing domain", { descriptors: [{ entries }] }, "domain: is required"],
    [
      "empty descriptors",
      { domain: "edge", descriptors: [] },
      "descriptors: must hold at least one descriptor",
    ],
    [
      "10,000 descriptors",
      { domain: "edge", descriptors: Array.from({ length: 10_000 }, () => ({ entries })) },
      "descriptors: take at most 64 descriptors, got 10000",
    ],
    [
      "a 1 MB value",
      {
        domain: "edge",
        descriptors: [{ entries: [{ key: "path", value: "/".repeat(1_000_000) }] }],
      },
      "descriptors[0].entries[0].value: takes at most 4096 characters",
    ],
    [
      "a negative hits_addend (sent as the uint32 it becomes)",
      { domain: "edge", descriptors: [{ entries }], hits_addend: -1 },
      "hits_addend: must be at most 1000000",
    ],
    [
      "a malformed customer id",
      { domain: "edge", descriptors: [{ entries: [{ key: "customer_id", value: "a b" }] }] },
      "descriptors[0].entries[0].value: is not a customer id (letters, digits and ._:@-, at most 128)",
    ],
  ])("%s", async (_name, request, details) => {
    await expect(clientAt(1).shouldRateLimit(request)).rejects.toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
      details,
    });
  });

  it("a message over 4 MiB is refused before decoding, and the replica still answers", async () => {
    const huge = {
      domain: "edge",
      descriptors: [{ entries: [{ key: "k", value: "x".repeat(5_000_000) }] }],
    };
    await expect(clientAt(2).shouldRateLimit(huge)).rejects.toMatchObject({
      code: grpc.status.RESOURCE_EXHAUSTED,
    });
    expect((await clientAt(2).shouldRateLimit(customerRequest("after", "pro"))).overall_code).toBe(
      "OK",
    );
  });
});

describe("forward-auth as Traefik and Caddy call it", () => {
  const check = (headers: Record<string, string>, path = "/check") =>
    fetch(`${services[0]?.httpUrl}${path}`, { headers });
  const traefik = (customerId: string, extra: Record<string, string> = {}) => ({
    "x-limitplane-secret": TEST_SECRET,
    "x-forwarded-method": "GET",
    "x-forwarded-proto": "https",
    "x-forwarded-host": "api.example.com",
    "x-forwarded-uri": "/v1/things?page=2",
    "x-forwarded-for": "203.0.113.7",
    "x-customer-id": customerId,
    "x-tier": "free",
    ...extra,
  });

  it("200 with the headers, then 429 with Retry-After and the problem body for the gateway to pass on", async () => {
    const first = await check(traefik("fa-1", { "x-limitplane-cost": "20" }));
    expect(first.status).toBe(200);
    expect(first.headers.get("ratelimit-policy")).toMatch(/^"tier:free";q=20;/);
    const second = await check(traefik("fa-1", { "x-limitplane-cost": "20" }));
    expect(second.status).toBe(429);
    const headers = Object.fromEntries(second.headers);
    const { problem } = checkRateLimitContract({
      status: 429,
      header: (name) => headers[name],
      bodyText: await second.text(),
    });
    expect(problem).toMatchObject({ scope: "tier:free" });
  });

  it("nginx's flag turns the 429 into a 403 carrying the body in Limitplane-Problem", async () => {
    await check(traefik("fa-2", { "x-limitplane-cost": "20" }));
    const denied = await check(traefik("fa-2", { "x-limitplane-deny-status": "403" }));
    expect(denied.status).toBe(403);
    expect(denied.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(JSON.parse(denied.headers.get("limitplane-problem") ?? "{}")).toMatchObject({
      status: 429,
      scope: "tier:free",
    });
  });

  it.each([
    [
      "401 without the secret",
      { "x-forwarded-method": "GET", "x-forwarded-uri": "/" },
      401,
      "/check",
    ],
    ["401 with a wrong secret", { "x-limitplane-secret": "wrong" }, 401, "/check"],
    [
      "400 naming a missing header",
      { "x-limitplane-secret": TEST_SECRET, "x-forwarded-uri": "/" },
      400,
      "/check",
    ],
    ["404 elsewhere", {}, 404, "/admin"],
  ])("%s", async (_name, headers, status, path) => {
    const response = await check(headers, path);
    expect(response.status).toBe(status);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    if (status === 400) expect((await response.json()).detail).toMatch(/^x-forwarded-method: /);
  });
});

describe("transport security and health", () => {
  const healthClient = (credentials: grpc.ChannelCredentials) => {
    const Client = grpc.makeGenericClientConstructor(healthService, "Health");
    return new Client(tlsService.grpcAddress, credentials);
  };
  const healthOf = (credentials: grpc.ChannelCredentials) =>
    new Promise<string>((resolve, reject) => {
      const client = healthClient(credentials);
      const method = client.Check;
      if (typeof method !== "function") throw new Error("no Check");
      method.call(
        client,
        { service: "envoy.service.ratelimit.v3.RateLimitService" },
        { deadline: Date.now() + 10_000 },
        (error: grpc.ServiceError | null, reply: { status: string }) => {
          client.close();
          if (error === null) resolve(reply.status);
          else reject(error);
        },
      );
    });
  const mutual = () =>
    grpc.credentials.createSsl(
      readFileSync(certs.ca),
      readFileSync(certs.clientKey),
      readFileSync(certs.clientCert),
    );

  it("the health service says NOT_SERVING before a policy and SERVING after, over mutual TLS", async () => {
    expect(await healthOf(mutual())).toBe("NOT_SERVING");
    await publishTestSnapshot(redis, tlsPrefix, snapshotVersion(1));
    await waitFor("SERVING", async () =>
      (await healthOf(mutual())) === "SERVING" ? true : undefined,
    );
    const reply = await rlsClient(tlsService.grpcAddress, mutual()).shouldRateLimit(
      customerRequest("tls-1", "free"),
    );
    expect(reply.overall_code).toBe("OK");
  });

  it.each([
    ["no client certificate", () => grpc.credentials.createSsl(readFileSync(certs.ca))],
    [
      "a certificate from another CA",
      () =>
        grpc.credentials.createSsl(
          readFileSync(certs.ca),
          readFileSync(certs.strangerKey),
          readFileSync(certs.strangerCert),
        ),
    ],
    ["plaintext", () => grpc.credentials.createInsecure()],
  ])("a client with %s is refused", async (_name, credentials) => {
    await expect(healthOf(credentials())).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE });
  });

  it("forward-auth over HTTPS accepts the client certificate in place of the secret, and refuses without either", async () => {
    const status = (withCert: boolean) =>
      new Promise<number>((resolve, reject) => {
        const url = new URL("/check", tlsService.httpUrl);
        const req = httpsRequest(
          {
            host: url.hostname,
            port: url.port,
            path: url.pathname,
            ca: readFileSync(certs.ca),
            ...(withCert
              ? { cert: readFileSync(certs.clientCert), key: readFileSync(certs.clientKey) }
              : {}),
            headers: { "x-forwarded-method": "GET", "x-forwarded-uri": "/v1/things" },
          },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on("error", reject);
        req.end();
      });
    expect(await status(true)).toBe(200);
    expect(await status(false)).toBe(401);
  });
});
