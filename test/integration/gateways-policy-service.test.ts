/**
 * Changes made through the control plane's policy services reach three running demo gateways: a
 * tier change, which they then enforce; an incident override, which lets one customer through
 * more, only that customer, and stops at its expiry by the gateways' clocks with no new
 * publication. Waits for what can be observed (versions, headers), never a fixed time.
 */
import { Agent, request } from "node:http";
import { tokenBucket } from "@limitplane/enforcer/testing";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { ControlDeps } from "@/lib/control/deps";
import { raiseIncident } from "@/lib/control/incident/raise-incident";
import { getTier } from "@/lib/control/tier/get-tier";
import { updateTier } from "@/lib/control/tier/update-tier";
import { systemClock } from "@/lib/server/composition";
import { createRedis } from "@/lib/server/redis";
import {
  filePrefix,
  type GatewayProcess,
  health,
  startGateways,
  waitFor,
  waitForVersion,
} from "./helpers/gateway-processes";
import { importExamplePolicy, operatorContext } from "./helpers/policy-fixtures";
import { provideTestDatabase } from "./helpers/test-database";

const database = provideTestDatabase();
const prefix = filePrefix("ps");
let redis: Redis;
let deps: ControlDeps;
let gateways: GatewayProcess[] = [];
const agent = new Agent({ keepAlive: true, maxSockets: 16 });

interface Reply {
  readonly status: number;
  readonly policy: string;
  readonly body: string;
}

function send(gateway: GatewayProcess, customerId: string, tier: string): Promise<Reply> {
  const url = new URL("/v1/things", gateway.url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        headers: { authorization: `Bearer ${customerId}`, "x-tier": tier },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          const policy = res.headers["ratelimit-policy"];
          resolve({
            status: res.statusCode ?? 0,
            policy: typeof policy === "string" ? policy : "",
            body: Buffer.concat(chunks).toString(),
          });
        });
      },
    );
    req.on("error", reject);
    req.end();
  });
}

async function redisNowMs(): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Number(micros) / 1000;
}

/** `count` simultaneous requests over the gateways, and the span Redis's clock saw. */
async function burst(count: number, customerId: string, tier: string) {
  const startedMs = await redisNowMs();
  const replies = await Promise.all(
    Array.from({ length: count }, (_, i) => {
      const gateway = gateways[i % gateways.length];
      if (gateway === undefined) throw new Error("no gateways");
      return send(gateway, customerId, tier);
    }),
  );
  const spanMs = (await redisNowMs()) - startedMs;
  return { replies, spanMs, admitted: replies.filter((reply) => reply.status === 200).length };
}

async function versions(): Promise<(number | null)[]> {
  return (await Promise.all(gateways.map(health))).map((report) => report.policy?.version ?? null);
}

beforeAll(async () => {
  redis = createRedis("control", { url: inject("redisUrl") });
  const db = database.current().db;
  deps = { db, publisher: { db, redis, prefix, clock: systemClock }, clock: systemClock };
  await importExamplePolicy(deps);
  gateways = await startGateways(3, { prefix, id: "ps", args: ["--expected-gateways", "3"] });
  await waitFor("a published policy on every gateway", async () =>
    (await versions()).every((version) => version !== null) ? true : undefined,
  );
});

afterAll(async () => {
  agent.destroy();
  await Promise.all(gateways.map((gateway) => gateway.stop()));
  redis.disconnect();
});

describe("policy changes through the services, enforced by three gateways", () => {
  it("a tier change reaches every gateway, which then enforce the new limit", async () => {
    const free = await getTier("free", deps);
    const receipt = await updateTier(
      { name: "free", expectedVersion: free.version, limit: tokenBucket(10, 1) },
      operatorContext("free tier abuse: bursts of 10 at 1/s"),
      deps,
    );
    expect(receipt.published).toBe(true);
    if (receipt.policyVersion === null) throw new Error("no new version");
    await waitForVersion(gateways, receipt.policyVersion);

    const { replies, spanMs, admitted } = await burst(16, "tier-change-1", "free");
    expect(admitted).toBeGreaterThanOrEqual(10);
    expect(admitted).toBeLessThanOrEqual(10 + Math.floor(spanMs / 1000));
    const rejection = replies.find((reply) => reply.status === 429);
    expect(rejection?.policy).toMatch(/^"tier:free";q=10;w=10/);
    expect(JSON.parse(rejection?.body ?? "{}")).toMatchObject({ scope: "tier:free" });
  });

  it("an incident override lets one customer through more, only that customer, until its expiry, with no new publication", async () => {
    const durationMs = 6_000;
    const receipt = await raiseIncident(
      { customerId: "initech", factor: 4, durationMs },
      operatorContext("initech backfill after their outage"),
      deps,
    );
    if (receipt.policyVersion === null) throw new Error("no new version");
    const incidentVersion = receipt.policyVersion;
    await waitForVersion(gateways, incidentVersion);
    const scope = `incident:${receipt.incident.id}`;

    // The free tier is bursts of 10 now; the incident makes it 40 for initech alone.
    const raised = await burst(16, "initech", "free");
    expect(raised.admitted).toBe(16);
    expect(raised.replies[0]?.policy).toContain(`"${scope}";q=40;`);
    const other = await burst(16, "not-initech", "free");
    expect(other.admitted).toBeLessThanOrEqual(10 + Math.floor(other.spanMs / 1000));
    expect(other.replies.find((reply) => reply.status === 429)?.policy).toMatch(/^"tier:free"/);

    // At its expiry each gateway stops applying it by its own clock.
    await waitFor(
      "the incident to expire on every gateway",
      async () => {
        const replies = await Promise.all(
          gateways.map((gateway) => send(gateway, "initech", "free")),
        );
        return replies.every((reply) => !reply.policy.includes(scope)) ? true : undefined;
      },
      { timeoutMs: durationMs + 15_000, intervalMs: 250 },
    );
    expect(await versions()).toEqual([incidentVersion, incidentVersion, incidentVersion]);
    const after = await burst(16, "initech", "free");
    expect(after.admitted).toBeLessThanOrEqual(10 + Math.floor(after.spanMs / 1000));
    const rejection = after.replies.find((reply) => reply.status === 429);
    expect(JSON.parse(rejection?.body ?? "{}")).toMatchObject({ scope: "tier:free" });
  });
});
