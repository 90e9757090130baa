/**
 * The example end to end against the real Redis (TEST_REDIS_URL, default 127.0.0.1:6379), under
 * a key prefix of this run's own: its limits in code, Hono on Node's server answering real HTTP
 * requests.
 */
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { type ServerType, serve } from "@hono/node-server";
import { createEnforcer, type Enforcer } from "@limitplane/enforcer";
import { createRedisClient } from "@limitplane/enforcer/publication";
import { checkFetchResponseContract, deleteKeysUnder } from "@limitplane/enforcer/testing";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "./app.js";
import { LIMITS } from "./limits.js";

const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379/0";
const prefix = `lph:${Date.now().toString(36)}_${process.pid}:`;
// The example's limits, the basic tier's reports budget refilling one unit a day: a burst gets
// exactly its size, however slow the run.
const limits = structuredClone(LIMITS);
const reports = limits.endpointClasses.find((endpointClass) => endpointClass.name === "reports");
if (reports?.limits === undefined) throw new Error("the example limits reports");
reports.limits.basic.refillPerSec = 1 / 86_400;
const REPORTS = reports.limits.basic.capacity / reports.cost;

let redis: Redis;
let enforcer: Enforcer;
let server: ServerType;
let baseUrl: string;

beforeAll(async () => {
  redis = createRedisClient("control", { url: REDIS_URL });
  enforcer = await createEnforcer({
    expectedGateways: 1,
    redis: { url: REDIS_URL, keyPrefix: prefix },
    policy: limits,
    logger: { log() {} },
  });
  const app = createApp({
    enforcer,
    accounts: new Map([["token-initech", { customerId: "initech", tier: "basic" }]]),
  });
  server = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 });
  await once(server, "listening");
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server?.close();
  await enforcer?.stop();
  await deleteKeysUnder(redis, prefix);
  await redis.quit();
});

const get = (path: string, token?: string) =>
  fetch(
    `${baseUrl}${path}`,
    token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } },
  );

describe("the Hono example", () => {
  it("spends a report's cost on the tier's reports budget, then answers 429 with the draft-11 headers and a problem", async () => {
    const responses = await Promise.all(
      Array.from({ length: REPORTS + 2 }, (_, index) =>
        get(`/v1/reports/${index}`, "token-initech"),
      ),
    );
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(REPORTS);
    expect(statuses.filter((status) => status === 429)).toHaveLength(2);
    const rejected = responses.find((response) => response.status === 429);
    if (rejected === undefined) throw new Error("no rejection");
    expect(rejected.headers.get("content-type")).toBe("application/problem+json");
    const contract = await checkFetchResponseContract(rejected);
    expect(contract.rateLimit).toMatchObject({ name: "tier:basic/endpoint:reports" });
    expect(contract.problem).toMatchObject({
      code: "RATE_LIMITED",
      scope: "tier:basic/endpoint:reports",
    });
  });

  it("adds the headers to the handler's response on an admission", async () => {
    const response = await get("/v1/things", "token-initech");
    expect(response.status).toBe(200);
    expect(await response.clone().json()).toEqual({ things: [] });
    const contract = await checkFetchResponseContract(response);
    expect(contract.policies.has("tier:basic")).toBe(true);
  });

  it("keys anonymous callers by the peer address the node server saw", async () => {
    const response = await get("/v1/things");
    expect(response.status).toBe(200);
    expect(response.headers.get("ratelimit-policy")).toContain('"address"');
  });
});
