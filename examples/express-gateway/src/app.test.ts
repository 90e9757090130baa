/**
 * The example end to end against the real Redis (TEST_REDIS_URL, default 127.0.0.1:6379): the
 * control plane's publication is played by `publishSnapshot`, under a key prefix of this run's
 * own, and the Express app answers real HTTP requests.
 */
import { once } from "node:events";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createEnforcer, type Enforcer } from "@limitplane/enforcer";
import { createRedisClient, publishSnapshot } from "@limitplane/enforcer/publication";
import {
  checkFetchResponseContract,
  deleteKeysUnder,
  exampleSnapshot,
  tokenBucket,
} from "@limitplane/enforcer/testing";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiKeys } from "./api-keys";
import { createApp } from "./app";

const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379/0";
const prefix = `lpx:${Date.now().toString(36)}_${process.pid}:`;
// Refilling one token a day: the bucket's size is exactly what a burst gets, however slow the run.
const FREE_BURST = 10;

let redis: Redis;
let enforcer: Enforcer;
let server: Server;
let baseUrl: string;

beforeAll(async () => {
  redis = createRedisClient("control", { url: REDIS_URL });
  const snapshot = exampleSnapshot(
    (policy) => {
      const free = policy.tiers.find((tier) => tier.name === "free");
      if (free === undefined) throw new Error("the example policy has a free tier");
      free.limit = tokenBucket(FREE_BURST, 1 / 86_400);
    },
    { version: 1, compiledAt: new Date().toISOString() },
  );
  await publishSnapshot(redis, prefix, {
    version: snapshot.version,
    checksum: snapshot.checksum,
    snapshotJson: JSON.stringify(snapshot),
  });
  enforcer = await createEnforcer({
    redisUrl: REDIS_URL,
    keyPrefix: prefix,
    expectedGateways: 1,
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
  it("runs the published policy", async () => {
    const health = await (await get("/healthz")).json();
    expect(health).toMatchObject({ ready: true, policy: { version: 1 } });
  });

  it("admits a free customer's burst exactly, then answers 429 with Retry-After and the scope", async () => {
    const responses = await Promise.all(
      Array.from({ length: FREE_BURST + 3 }, () => get("/v1/things", "key-initech")),
    );
    const statuses = responses.map((response) => response.status).sort();
    expect(statuses.filter((status) => status === 200)).toHaveLength(FREE_BURST);
    expect(statuses.filter((status) => status === 429)).toHaveLength(3);
    const rejected = responses.find((response) => response.status === 429);
    expect(Number(rejected?.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(rejected?.headers.get("ratelimit-policy")).toContain('"tier:free"');
    if (rejected === undefined) throw new Error("no rejection");
    expect((await checkFetchResponseContract(rejected)).problem).toMatchObject({
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
    expect(metrics).toContain('limitplane_policy_version{enforcer="');
  });
});
