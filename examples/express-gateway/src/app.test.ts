/**
 * The example end to end against the real Redis (TEST_REDIS_URL, default 127.0.0.1:6379), under
 * a key prefix of this run's own: its limits in code, the Express app answering real HTTP
 * requests.
 */
import { once } from "node:events";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createEnforcer, type Enforcer } from "@limitplane/enforcer";
import { createRedisClient } from "@limitplane/enforcer/publication";
import { checkFetchResponseContract, deleteKeysUnder } from "@limitplane/enforcer/testing";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiKeys } from "./api-keys.js";
import { createApp } from "./app.js";
import { LIMITS } from "./limits.js";

const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379/0";
const prefix = `lpx:${Date.now().toString(36)}_${process.pid}:`;
// The example's limits, the free tier refilling one unit a day: a burst gets exactly its size,
// however slow the run.
const limits = structuredClone(LIMITS);
const free = limits.tiers.find((tier) => tier.name === "free");
if (free === undefined) throw new Error("the example's limits have a free tier");
free.limit.refillPerSec = 1 / 86_400;
const FREE_BURST = free.limit.capacity;

let redis: Redis;
let enforcer: Enforcer;
let server: Server;
let baseUrl: string;

beforeAll(async () => {
  redis = createRedisClient("control", { url: REDIS_URL });
  enforcer = await createEnforcer({
    expectedGateways: 1,
    redis: { url: REDIS_URL, keyPrefix: prefix },
    policy: limits,
    logger: { log() {} },
  });
  const apiKeys = new ApiKeys({
    "key-initech": { customerId: "initech", tier: "free" },
    "key-globex": { customerId: "globex", tier: "pro" },
  });
  server = createApp({ enforcer, apiKeys }).listen(0, "127.0.0.1");
  await once(server, "listening");
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server?.close();
  await enforcer?.stop();
  await deleteKeysUnder(redis, prefix);
  await redis.quit();
});

const get = (path: string, key?: string) =>
  fetch(
    `${baseUrl}${path}`,
    key === undefined ? {} : { headers: { authorization: `Bearer ${key}` } },
  );

describe("the Express example", () => {
  it("is ready at once with its limits in code", async () => {
    const health = await (await get("/healthz")).json();
    expect(health).toMatchObject({ ready: true, policy: { version: 1 } });
  });

  it("admits a free customer's burst exactly, then answers 429 with the draft-11 headers and a problem", async () => {
    const responses = await Promise.all(
      Array.from({ length: FREE_BURST + 3 }, () => get("/v1/things", "key-initech")),
    );
    const statuses = responses.map((response) => response.status).sort();
    expect(statuses.filter((status) => status === 200)).toHaveLength(FREE_BURST);
    expect(statuses.filter((status) => status === 429)).toHaveLength(3);
    const rejected = responses.find((response) => response.status === 429);
    if (rejected === undefined) throw new Error("no rejection");
    expect(rejected.headers.get("content-type")).toBe("application/problem+json");
    const contract = await checkFetchResponseContract(rejected);
    expect(contract.policies.get("tier:free")).toMatchObject({ quota: FREE_BURST });
    expect(contract.rateLimit).toMatchObject({ name: "tier:free", remaining: 0 });
    expect(contract.retryAfterSec).toBeGreaterThan(0);
    expect(contract.problem).toMatchObject({
      "violated-policies": ["tier:free"],
      code: "RATE_LIMITED",
      scope: "tier:free",
    });
  });

  it("takes the tier from the API key: a pro customer is not held to the free burst", async () => {
    const responses = await Promise.all(
      Array.from({ length: FREE_BURST + 3 }, () => get("/v1/things", "key-globex")),
    );
    expect(responses.map((response) => response.status)).toEqual(Array(FREE_BURST + 3).fill(200));
    expect(responses[0]?.headers.get("ratelimit-policy")).toContain('"tier:pro"');
  });

  it("leaves health checks unlimited and serves the metrics", async () => {
    const metrics = await (await get("/metrics")).text();
    expect(metrics).toMatch(/^limitplane_policy_version\{enforcer="[^"]+"\} 1$/m);
  });
});
