/**
 * Limits written in code (`createEnforcer({ policy })`) against the real Redis, under this run's
 * key prefix: in force from the first request with the same decisions, headers and metrics as a
 * published policy, never replaced by one, and every mistake in the options an
 * `EnforcerOptionsError` naming its field before anything is opened.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createEnforcer, type Enforcer, type EnforcerOptions, EnforcerOptionsError } from "../src";
import { formatFieldPath, type TPolicyDocumentInput } from "../src/policy";
import { checkRateLimitContract, freePort, publishTestSnapshot } from "../src/testing";
import { exampleSnapshot } from "../src/testing/policy-factory";

const redisUrl = inject("redisUrl");
const runPrefix = inject("redisKeyPrefix");
// A day to refill one unit: the bucket's size is exactly what a burst gets, however slow the run.
const SLOW = 1 / 86_400;

/** One tier of 3, and anonymous addresses held to 2. */
const LIMITS = {
  defaultTier: "free",
  defaultEndpointClass: "default",
  tiers: [{ name: "free", limit: { algorithm: "token-bucket", capacity: 3, refillPerSec: SLOW } }],
  endpointClasses: [{ name: "default" }],
  ceilings: {
    perCustomer: { algorithm: "token-bucket", capacity: 1_000, refillPerSec: 100 },
    perAddress: { algorithm: "token-bucket", capacity: 2, refillPerSec: SLOW },
  },
} satisfies TPolicyDocumentInput;

let redis: Redis;
const running: Enforcer[] = [];

beforeAll(() => {
  redis = new Redis(redisUrl);
});

afterAll(async () => {
  await Promise.all(running.map((enforcer) => enforcer.stop()));
  redis.disconnect();
});

const prefixOf = (name: string) => `${runPrefix}code-${name}-${randomBytes(3).toString("hex")}:`;

interface Logged {
  readonly level: string;
  readonly message: string;
  readonly fields: Readonly<Record<string, unknown>>;
}

async function start(
  options: Omit<EnforcerOptions, "expectedGateways" | "redis"> & {
    redis?: EnforcerOptions["redis"];
  },
): Promise<{ enforcer: Enforcer; logs: Logged[] }> {
  const logs: Logged[] = [];
  const enforcer = await createEnforcer({
    expectedGateways: 1,
    redis: { url: redisUrl, keyPrefix: prefixOf("x") },
    logger: { log: (level, message, fields = {}) => logs.push({ level, message, fields }) },
    ...options,
  });
  running.push(enforcer);
  return { enforcer, logs };
}

const request = (customerId: string | null) => ({
  customerId,
  tier: customerId === null ? null : "free",
  method: "GET",
  path: "/v1/things",
  clientAddress: "198.51.100.7",
});

describe("limits written in code", () => {
  it("are in force from the first request: a burst gets exactly the tier's size, then a 429 with the draft-11 headers", async () => {
    const { enforcer, logs } = await start({ policy: LIMITS });
    expect(enforcer.status()).toMatchObject({
      isReady: true,
      policy: { version: 1, via: "bootstrap" },
    });
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await enforcer.check(request("initech")));
    expect(results.map((result) => result.decision.allowed)).toEqual([true, true, true, false]);
    const rejected = results[3];
    if (rejected === undefined) throw new Error("no fourth result");
    expect(rejected.decision).toMatchObject({ source: "store", scope: "tier:free" });
    const contract = checkRateLimitContract({
      status: rejected.http.status ?? 200,
      header: (name) =>
        Object.entries(rejected.http.headers).find(
          ([key]) => key.toLowerCase() === name.toLowerCase(),
        )?.[1],
      bodyText: rejected.http.bodyText ?? "",
    });
    expect(contract.status).toBe(429);
    expect(contract.policies.get("tier:free")).toMatchObject({ quota: 3 });
    expect(contract.rateLimit).toMatchObject({ name: "tier:free", remaining: 0 });
    expect(contract.problem).toMatchObject({ code: "RATE_LIMITED", scope: "tier:free" });
    expect(enforcer.prometheus()).toMatch(/^limitplane_policy_version\{enforcer="[^"]+"\} 1$/m);
    expect(logs.filter((line) => line.level !== "info")).toEqual([]);
  });

  it("hold anonymous traffic to the per-address ceiling", async () => {
    const { enforcer } = await start({ policy: LIMITS });
    const allowed = [];
    for (let i = 0; i < 3; i++) allowed.push((await enforcer.check(request(null))).decision);
    expect(allowed.map((decision) => decision.allowed)).toEqual([true, true, false]);
    expect(allowed[2]).toMatchObject({ scope: "address" });
  });

  it("are never replaced by a policy published under the same prefix", async () => {
    const prefix = prefixOf("published");
    await publishTestSnapshot(
      redis,
      prefix,
      exampleSnapshot(() => {}, { version: 5 }),
    );
    const { enforcer } = await start({
      policy: LIMITS,
      redis: { url: redisUrl, keyPrefix: prefix },
    });
    await enforcer.refreshPolicy();
    expect(enforcer.status().policy).toMatchObject({ version: 1, via: "bootstrap" });
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await enforcer.check(request("globex")));
    expect(results.map((result) => result.decision.allowed)).toEqual([true, true, true, false]);
  });

  it("with a Redis that cannot be reached: one error line naming it, and the failure policy decides", async () => {
    const port = await freePort();
    const { enforcer, logs } = await start({
      policy: LIMITS,
      redis: { url: `redis://:secret@127.0.0.1:${port}/0`, keyPrefix: prefixOf("down") },
    });
    expect(logs.filter((line) => line.level === "error")).toEqual([
      {
        level: "error",
        message: expect.stringMatching(/^cannot reach Redis: until it answers/),
        fields: expect.objectContaining({
          redis: `redis://:***@127.0.0.1:${port}/0`,
          error: expect.stringContaining("ECONNREFUSED"),
        }),
      },
    ]);
    const result = await enforcer.check(request("initech"));
    expect(result.decision).toMatchObject({ source: "fallback", degraded: true });
  });
});

describe("createEnforcer refuses options it cannot run with", () => {
  const refusal = async (options: unknown) => {
    const quiet = { logger: { log() {} }, ...(options as EnforcerOptions) };
    const error = await createEnforcer(quiet).then(
      (enforcer) => {
        running.push(enforcer);
        throw new Error("createEnforcer accepted the options");
      },
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(EnforcerOptionsError);
    return error as EnforcerOptionsError;
  };

  it.each([
    [
      "a policy mistake, at its field",
      {
        expectedGateways: 1,
        redis: { url: "redis://127.0.0.1:6379" },
        policy: {
          ...LIMITS,
          tiers: [{ name: "free", limit: { ...LIMITS.tiers[0]?.limit, capacity: 0 } }],
        },
      },
      ["policy.tiers[0].limit.capacity"],
    ],
    [
      "a URL without the redis:// scheme",
      { expectedGateways: 1, redis: { url: "127.0.0.1:6379" } },
      ["redis.url"],
    ],
    [
      "a URL of another scheme",
      { expectedGateways: 1, redis: { url: "http://127.0.0.1:6379" } },
      ["redis.url"],
    ],
    ["no Redis, and no gateway count", { redis: {} }, ["expectedGateways", "redis"]],
    [
      "a behaviour without a policy that is neither admit nor reject",
      {
        expectedGateways: 1,
        redis: { url: "redis://127.0.0.1:6379" },
        controlPlane: { withoutPolicy: "maybe" },
      },
      ["controlPlane.withoutPolicy"],
    ],
    [
      "a Sentinel without sentinels or a master name",
      { expectedGateways: 1, redis: { url: "redis://127.0.0.1", sentinel: { nodes: [] } } },
      ["redis.sentinel.nodes", "redis.sentinel.name"],
    ],
    [
      "a sentinel that is not { host, port }",
      {
        expectedGateways: 1,
        redis: {
          url: "redis://127.0.0.1",
          sentinel: { nodes: [{ host: "a", port: 26379 }, "b:26379"], name: "main" },
        },
      },
      ["redis.sentinel.nodes[1]"],
    ],
    [
      "hostile Sentinel credentials and TLS",
      {
        expectedGateways: 1,
        redis: {
          url: "redis://127.0.0.1",
          sentinel: {
            nodes: [{ host: "a", port: 26379 }],
            name: "main\r\nFLUSHALL",
            password: 42,
            tls: "yes",
          },
        },
      },
      ["redis.sentinel.name", "redis.sentinel.password", "redis.sentinel.tls"],
    ],
    [
      "a Sentinel and a Cluster both",
      {
        expectedGateways: 1,
        redis: {
          url: "redis://127.0.0.1",
          clusterNodes: [{ host: "a", port: 7000 }],
          sentinel: { nodes: [{ host: "a", port: 26379 }], name: "main" },
        },
      },
      ["redis.sentinel"],
    ],
    [
      "limits in code and a bootstrap snapshot both",
      {
        expectedGateways: 1,
        redis: { url: "redis://127.0.0.1:6379" },
        policy: LIMITS,
        controlPlane: { bootstrapSnapshot: exampleSnapshot() },
      },
      ["controlPlane.bootstrapSnapshot"],
    ],
  ])("%s", async (_name, options, paths) => {
    const error = await refusal(options);
    // Each field once, however many of its rules it breaks.
    expect([...new Set(error.errors.map((problem) => formatFieldPath(problem.path)))]).toEqual(
      paths,
    );
    for (const problem of error.errors) expect(error.message).toContain(problem.message);
  });

  it("a value a part refuses, with the part's message", async () => {
    const error = await refusal({
      expectedGateways: 1,
      redis: { url: redisUrl, keyPrefix: prefixOf("range") },
      policy: LIMITS,
      timeouts: { storeCallMs: 100, maxWaitMs: 10 },
    });
    expect(error.message).toMatch(/maxWaitMs/);
    expect(error.cause).toBeInstanceOf(RangeError);
  });
});
