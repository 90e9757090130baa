/**
 * The example end to end against the real Redis (TEST_REDIS_URL, default 127.0.0.1:6379), under
 * a key prefix of this run's own: its limits in code, Fastify answering real HTTP requests.
 */
import { createEnforcer, type Enforcer } from "@limitplane/enforcer";
import { createRedisClient } from "@limitplane/enforcer/publication";
import { checkFetchResponseContract, deleteKeysUnder } from "@limitplane/enforcer/testing";
import type { FastifyInstance } from "fastify";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "./app.js";
import { LIMITS } from "./limits.js";

const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379/0";
const prefix = `lpf:${Date.now().toString(36)}_${process.pid}:`;
// The example's limits, sign-in attempts refilling one a day: a burst gets exactly the size,
// however slow the run.
const limits = structuredClone(LIMITS);
const signIn = limits.endpointClasses.find((endpointClass) => endpointClass.name === "sign-in");
if (signIn?.anonymousLimit === undefined) throw new Error("the example limits sign-in");
signIn.anonymousLimit.refillPerSec = 1 / 86_400;
const ATTEMPTS = signIn.anonymousLimit.capacity;

let redis: Redis;
let enforcer: Enforcer;
let app: FastifyInstance;
let baseUrl: string;

beforeAll(async () => {
  redis = createRedisClient("control", { url: REDIS_URL });
  enforcer = await createEnforcer({
    expectedGateways: 1,
    redis: { url: REDIS_URL, keyPrefix: prefix },
    policy: limits,
    logger: { log() {} },
  });
  app = buildApp({ enforcer, apiKeys: new Map([["key-umbrella", "umbrella"]]) });
  baseUrl = await app.listen({ host: "127.0.0.1", port: 0 });
});

afterAll(async () => {
  await app?.close();
  await enforcer?.stop();
  await deleteKeysUnder(redis, prefix);
  await redis.quit();
});

describe("the Fastify example", () => {
  it("holds an address to its sign-in attempts, then answers 429 with the draft-11 headers and a problem", async () => {
    const responses = await Promise.all(
      Array.from({ length: ATTEMPTS + 2 }, () =>
        fetch(`${baseUrl}/v1/sign-in`, { method: "POST" }),
      ),
    );
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(ATTEMPTS);
    expect(statuses.filter((status) => status === 429)).toHaveLength(2);
    const rejected = responses.find((response) => response.status === 429);
    if (rejected === undefined) throw new Error("no rejection");
    // Fastify adds a charset to a string body it sends.
    expect(rejected.headers.get("content-type")).toMatch(/^application\/problem\+json(;|$)/);
    const contract = await checkFetchResponseContract(rejected);
    expect(contract.rateLimit).toMatchObject({ name: "address/endpoint:sign-in", remaining: 0 });
    expect(contract.problem).toMatchObject({
      code: "RATE_LIMITED",
      scope: "address/endpoint:sign-in",
    });
  });

  it("counts sign-in apart from the address's other traffic", async () => {
    const response = await fetch(`${baseUrl}/v1/things`);
    expect(response.status).toBe(200);
    expect(response.headers.get("ratelimit-policy")).toContain('"address"');
  });

  it("limits an API key holder by the tier, with the headers on an admission", async () => {
    const response = await fetch(`${baseUrl}/v1/things`, {
      headers: { "x-api-key": "key-umbrella" },
    });
    expect(response.status).toBe(200);
    const contract = await checkFetchResponseContract(response);
    expect(contract.policies.has("tier:standard")).toBe(true);
  });

  it("leaves the health check unlimited", async () => {
    const response = await fetch(`${baseUrl}/healthz`);
    expect(response.status).toBe(200);
    expect(response.headers.get("ratelimit-policy")).toBeNull();
  });
});
