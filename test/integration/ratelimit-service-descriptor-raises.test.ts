/**
 * Raises of one descriptor value, and descriptor rules on leases, in real rate-limit service
 * processes on the shared Redis, called over gRPC with Envoy's protos.
 *
 * - A raise of `tenant=acme` gives acme its limit and leaves every other tenant on the rule's, on
 *   the same counter; a raise that expires gives its value the rule's limit back by itself.
 * - Two services with leases decide a busy descriptor rule: most decisions are made from leases,
 *   and exactly the limit is admitted across both. The round runs inside one window of Redis's
 *   clock and is run again in a later window if it ran across a window's end.
 */
import {
  compileSnapshot,
  parsePolicyDocument,
  type TDescriptorRuleInput,
} from "@limitplane/enforcer/policy";
import { examplePolicyInput, publishTestSnapshot } from "@limitplane/enforcer/testing";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createRedis } from "@/lib/server/redis";
import { filePrefix, promSample } from "./helpers/gateway-processes";
import {
  type RlsClient,
  rlsClient,
  type ServiceProcess,
  startService,
  waitForReady,
} from "./helpers/ratelimit-service-processes";

const DAY = { algorithm: "fixed-window", windowMs: 86_400_000 } as const;
const LEASE_WINDOW_MS = 10_000;
/** envoyproxy/ratelimit's `year`: 365 days. */
const YEAR_MS = 365 * 86_400_000;
const LEASE_LIMIT = 250;

const prefix = filePrefix("rr");
let redis: Redis;
let services: ServiceProcess[] = [];
let clients: RlsClient[] = [];

function rules(raises: TDescriptorRuleInput["raises"] = []): TDescriptorRuleInput[] {
  return [
    {
      id: "tenant",
      domain: "raises",
      descriptor: [{ key: "tenant" }],
      limit: { ...DAY, limit: 2 },
      raises,
    },
    {
      id: "yearly",
      domain: "raises",
      descriptor: [{ key: "plan", value: "yearly" }],
      limit: { algorithm: "fixed-window", limit: 2, windowMs: YEAR_MS },
    },
    {
      id: "weekly",
      domain: "raises",
      descriptor: [{ key: "plan", value: "weekly" }],
      limit: { algorithm: "fixed-window", limit: 700, windowMs: 7 * 86_400_000 },
    },
    {
      id: "monthly",
      domain: "raises",
      descriptor: [{ key: "plan", value: "monthly" }],
      limit: { algorithm: "sliding-window", limit: 3_000, windowMs: 30 * 86_400_000 },
    },
    {
      id: "busy",
      domain: "raises",
      descriptor: [{ key: "busy" }],
      limit: { algorithm: "fixed-window", limit: LEASE_LIMIT, windowMs: LEASE_WINDOW_MS },
    },
  ];
}

async function publish(version: number, descriptorRules: TDescriptorRuleInput[]): Promise<void> {
  const parsed = parsePolicyDocument({ ...examplePolicyInput(), descriptorRules });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors.slice(0, 3)));
  await publishTestSnapshot(
    redis,
    prefix,
    compileSnapshot(parsed.value, { version, compiledAt: new Date().toISOString() }),
  );
}

async function versionOf(service: ServiceProcess): Promise<number | null> {
  const status = (await (await fetch(`${service.httpUrl}/healthz`)).json()) as {
    policy: { version: number } | null;
  };
  return status.policy?.version ?? null;
}

async function code(client: RlsClient, key: string, value: string): Promise<string> {
  const reply = await client.shouldRateLimit({
    domain: "raises",
    hits_addend: 0,
    descriptors: [{ entries: [{ key, value }] }],
  });
  return reply.overall_code;
}

async function codes(tenant: string, count: number): Promise<string[]> {
  const result: string[] = [];
  for (let i = 0; i < count; i++)
    result.push(await code(clients[0] as RlsClient, "tenant", tenant));
  return result;
}

async function redisNowMs(): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

beforeAll(async () => {
  redis = createRedis("control", { url: inject("redisUrl") });
  await publish(1, rules());
  services = await Promise.all([
    startService({ prefix, id: "rls-raises-a" }),
    startService({ prefix, id: "rls-raises-b" }),
  ]);
  await Promise.all(services.map(waitForReady));
  clients = services.map((service) => rlsClient(service.grpcAddress));
});

afterAll(async () => {
  for (const client of clients) client.close();
  await Promise.all(services.map((service) => service.stop()));
  redis?.disconnect();
});

describe("a raise of one descriptor value, over gRPC", () => {
  it("gives the raised value its limit on the same counter, other values the rule's, and expiry gives it back", async () => {
    expect(await codes("acme", 1)).toEqual(["OK"]);
    expect(await codes("initech", 2)).toEqual(["OK", "OK"]);
    const nowMs = Date.now();
    await publish(2, [
      ...rules([
        {
          id: "acme-launch",
          descriptor: [{ key: "tenant", value: "acme" }],
          limit: { ...DAY, limit: 5 },
          startsAt: new Date(nowMs - 1_000).toISOString(),
          expiresAt: new Date(nowMs + 3_600_000).toISOString(),
          owner: "ops",
          reason: "launch day",
        },
        {
          id: "initech-brief",
          descriptor: [{ key: "tenant", value: "initech" }],
          factor: 10,
          startsAt: new Date(nowMs - 1_000).toISOString(),
          expiresAt: new Date(nowMs + 6_000).toISOString(),
          owner: "ops",
          reason: "a short raise",
        },
      ]),
    ]);
    await expect.poll(() => versionOf(services[0] as ServiceProcess), { timeout: 30_000 }).toBe(2);

    // acme: one spent before the raise, four more under its 5; hooli keeps the rule's 2.
    expect(await codes("acme", 5)).toEqual(["OK", "OK", "OK", "OK", "OVER_LIMIT"]);
    expect(await codes("hooli", 3)).toEqual(["OK", "OK", "OVER_LIMIT"]);

    // initech spent its 2 before the raise: admitted while the raise is in force, over once it
    // has expired, with nothing republished.
    expect(await codes("initech", 1)).toEqual(["OK"]);
    await expect
      .poll(() => code(clients[0] as RlsClient, "tenant", "initech"), {
        timeout: 30_000,
        // Under the raise's 20, a poll every half second outlasts the raise.
        interval: 500,
      })
      .toBe("OVER_LIMIT");
    expect(Date.now()).toBeGreaterThanOrEqual(nowMs + 6_000);
    expect(await codes("acme", 1)).toEqual(["OVER_LIMIT"]);
  });
});

describe("a window of a year (envoyproxy/ratelimit's unit: year)", () => {
  it("admits its limit once in the window and says when the window ends", async () => {
    const client = clients[0] as RlsClient;
    const replies = [];
    for (let i = 0; i < 3; i++) {
      replies.push(
        await client.shouldRateLimit({
          domain: "raises",
          hits_addend: 0,
          descriptors: [{ entries: [{ key: "plan", value: "yearly" }] }],
        }),
      );
    }
    expect(replies.map((reply) => reply.overall_code)).toEqual(["OK", "OK", "OVER_LIMIT"]);
    // The window is the epoch-aligned year envoyproxy/ratelimit counts: it ends where
    // now - now % year + year does, by Redis's clock.
    const nowMs = await redisNowMs();
    const endsInMs = YEAR_MS - (nowMs % YEAR_MS);
    const reset = replies[2]?.statuses[0]?.duration_until_reset;
    const resetMs = (reset?.seconds ?? 0) * 1000 + (reset?.nanos ?? 0) / 1e6;
    expect(Math.abs(resetMs - endsInMs)).toBeLessThan(60_000);
  });
});

describe("the answer names a rule's week, month or year as Envoy's unit", () => {
  // Decoded with the protos in @grpc/grpc-js-xds, which predate WEEK: Envoy numbers it 7.
  it.each([
    ["weekly", 700, 7],
    ["monthly", 3_000, "MONTH"],
    ["yearly", 2, "YEAR"],
  ])("plan=%s is %d per %s", async (plan, requestsPerUnit, unit) => {
    const reply = await (clients[1] as RlsClient).shouldRateLimit({
      domain: "raises",
      hits_addend: 0,
      descriptors: [{ entries: [{ key: "plan", value: plan }] }],
    });
    expect(reply.statuses[0]?.current_limit).toMatchObject({
      requests_per_unit: requestsPerUnit,
      unit,
    });
  });
});

describe("descriptor rules on leases", () => {
  it("two services admit exactly the limit of a busy rule, part of it from leases", async () => {
    const leased = async () => {
      let total = 0;
      for (const service of services) {
        const text = await (await fetch(`${service.httpUrl}/metrics`)).text();
        total += promSample(text, "limitplane_decision_sources_total", { source: "lease" });
      }
      return total;
    };
    const leasedBefore = await leased();
    for (let attempt = 0; attempt < 10; attempt++) {
      // Start at a window's beginning, so the round fits in it.
      const startMs = await redisNowMs();
      const windowIndex = Math.floor(startMs / LEASE_WINDOW_MS);
      if (startMs - windowIndex * LEASE_WINDOW_MS > 1_000) {
        const waitMs = (windowIndex + 1) * LEASE_WINDOW_MS - startMs;
        await new Promise((resolve) => setTimeout(resolve, waitMs));
        continue;
      }
      const value = `round-${windowIndex}`;
      let admitted = 0;
      // Paced over a few lease lifetimes: a gateway leases a list it has seen busy for one.
      for (let batch = 0; batch < 40; batch++) {
        const replies = await Promise.all(
          Array.from({ length: 10 }, (_, index) =>
            code(clients[index % 2] as RlsClient, "busy", value),
          ),
        );
        admitted += replies.filter((reply) => reply === "OK").length;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(admitted).toBeLessThanOrEqual(LEASE_LIMIT);
      // Units a lease still holds at the round's end come back within its lifetime (a fifth of
      // the window at most): the rest of the limit is admitted, and not one more.
      while (
        admitted < LEASE_LIMIT &&
        Math.floor((await redisNowMs()) / LEASE_WINDOW_MS) === windowIndex
      ) {
        const replies = await Promise.all(clients.map((client) => code(client, "busy", value)));
        admitted += replies.filter((reply) => reply === "OK").length;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const after = await Promise.all(
        Array.from({ length: 20 }, (_, index) =>
          code(clients[index % 2] as RlsClient, "busy", value),
        ),
      );
      admitted += after.filter((reply) => reply === "OK").length;
      if (Math.floor((await redisNowMs()) / LEASE_WINDOW_MS) !== windowIndex) continue;
      expect(admitted).toBe(LEASE_LIMIT);
      expect((await leased()) - leasedBefore).toBeGreaterThan(0);
      return;
    }
    throw new Error("no round fitted in one window");
  });
});
