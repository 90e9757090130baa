/**
 * POST /api/v1/explain/descriptors through the real route handler: which descriptor rule decides
 * each descriptor of a call (most specific first, wildcards, `unlimited`, shadow mode, `replaces`,
 * the mapping for the rest) and the live state of each rule's counter, read from the Redis a real
 * rate-limit service spends on over gRPC. The explanation and the service's answers must agree.
 */
import { RedisStore } from "@limitplane/enforcer/limiter";
import { publishTestSnapshot } from "@limitplane/enforcer/testing";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { readCompiledSnapshot } from "@/lib/control/policy/get-current-snapshot";
import { installDeps } from "@/lib/server/composition";
import { createRedis } from "@/lib/server/redis";
import { provideApiHarness } from "./helpers/api-harness";
import { filePrefix } from "./helpers/gateway-processes";
import {
  type RlsClient,
  rlsClient,
  type ServiceProcess,
  startService,
  waitForReady,
} from "./helpers/ratelimit-service-processes";

const api = provideApiHarness();
const prefix = filePrefix("xd");
const viewer = () => ({ token: api.as("viewer").token });

const EXPLAIN_YAML = [
  "domain: explain",
  "descriptors:",
  "  - key: tenant",
  "    rate_limit: { unit: day, requests_per_unit: 3 }",
  "  - key: tenant",
  "    value: acme",
  "    rate_limit: { unit: day, requests_per_unit: 1 }",
  "  - key: tenant",
  "    value: beta-*",
  "    rate_limit: { unit: day, requests_per_unit: 2 }",
  "  - key: trial",
  "    rate_limit: { unit: day, requests_per_unit: 1 }",
  "    shadow_mode: true",
  "  - key: internal",
  "    rate_limit: { unlimited: true }",
  "  - key: blocked",
  "    rate_limit: { unit: day, requests_per_unit: 0 }",
  "",
].join("\n");

const REPLACES_YAML = [
  "domain: replacing",
  "descriptors:",
  "  - key: key_1",
  "    value: value_1",
  "    descriptors:",
  "      - key: user",
  "        rate_limit: { name: specific_limit, unit: day, requests_per_unit: 5 }",
  "  - key: key_2",
  "    value: value_2",
  "    descriptors:",
  "      - key: user",
  "        rate_limit:",
  "          replaces: [{ name: specific_limit }]",
  "          unit: day",
  "          requests_per_unit: 10",
  "",
].join("\n");

let redis: Redis;
let service: ServiceProcess;
let client: RlsClient;

type Entries = { key: string; value: string }[];

function entries(text: string): Entries {
  return text.split(",").map((pair) => {
    const [key = "", value = ""] = pair.split("=");
    return { key, value };
  });
}

async function explain(domain: string, descriptors: string[]) {
  const response = await api.call("POST", "/api/v1/explain/descriptors", {
    as: viewer(),
    body: { domain, descriptors: descriptors.map(entries) },
  });
  expect(response.status, response.text).toBe(200);
  return response.body;
}

async function rls(domain: string, descriptors: string[]): Promise<string> {
  const reply = await client.shouldRateLimit({
    domain,
    hits_addend: 0,
    descriptors: descriptors.map((text) => ({ entries: entries(text) })),
  });
  return reply.overall_code;
}

beforeAll(async () => {
  redis = createRedis("control", { url: inject("redisUrl") });
  const imported = await api.call("POST", "/api/v1/descriptor-rules/import-envoy", {
    as: { token: api.as("admin").token },
    body: {
      files: [
        { name: "explain.yaml", text: EXPLAIN_YAML },
        { name: "replacing.yaml", text: REPLACES_YAML },
      ],
      reason: "rules to explain",
    },
  });
  expect(imported.status, imported.text).toBe(200);
  // The service follows what the control plane compiled, published under this file's prefix.
  await publishTestSnapshot(redis, prefix, await readCompiledSnapshot("all", { db: api.db() }));
  service = await startService({ prefix, id: "rls-explain", args: ["--no-leases"] });
  await waitForReady(service);
  client = rlsClient(service.grpcAddress);
  installDeps({
    explain: {
      db: api.db(),
      store: new RedisStore({ client: redis, keyPrefix: prefix }),
      clock: { nowMs: api.nowMs },
    },
  });
});

afterAll(async () => {
  client?.close();
  await service?.stop();
  redis?.disconnect();
});

describe("POST /api/v1/explain/descriptors: which rule decides each descriptor", () => {
  it.each([
    ["tenant=acme", "rule", "explain: tenant=acme", "tenant=acme", 1],
    ["tenant=globex", "rule", "explain: tenant", "tenant", 3],
    ["tenant=beta-7", "rule", "explain: tenant=beta-*", "tenant=beta-*", 2],
    ["internal=reports", "unlimited", "explain: internal", "internal", null],
  ])("%s: %s by %s", async (descriptor, verdict, pattern, matchedAs, limit) => {
    const body = await explain("explain", [descriptor]);
    const [explained] = body.descriptors;
    expect(explained).toMatchObject({ verdict, rule: { pattern }, matchedAs });
    if (limit !== null) expect(explained.limit).toMatchObject({ limit });
    else expect(explained.limit).toBe("unlimited");
  });

  it("a deny rule is over the limit without a counter", async () => {
    const body = await explain("explain", ["blocked=x"]);
    expect(body.descriptors[0]).toMatchObject({
      verdict: "rule",
      limit: "deny",
      live: { allowed: false, remaining: 0 },
    });
    expect(body.overallCode).toBe("OVER_LIMIT");
    expect(await rls("explain", ["blocked=x"])).toBe("OVER_LIMIT");
  });

  it("replaces: the replaced rule is neither checked nor counted, and names its replacement", async () => {
    const body = await explain("replacing", ["key_1=value_1,user=bob", "key_2=value_2,user=bob"]);
    const [first, second] = body.descriptors;
    expect(first).toMatchObject({ verdict: "replaced", rule: { name: "specific_limit" } });
    expect(first.replacedBy).toEqual([{ id: second.rule.id, name: null }]);
    expect(first.live).toBeNull();
    expect(second).toMatchObject({ verdict: "rule", limit: { limit: 10 } });
    // Alone, the first descriptor is its own rule's.
    const alone = await explain("replacing", ["key_1=value_1,user=bob"]);
    expect(alone.descriptors[0]).toMatchObject({ verdict: "rule", limit: { limit: 5 } });
  });

  it("descriptors no rule matches go to the mapping: a customer, uncovered, or refused", async () => {
    const body = await explain("explain", ["customer_id=globex", "colour=blue"]);
    expect(body.descriptors[0]).toMatchObject({
      verdict: "mapped",
      rule: null,
      mapped: { customerId: "globex", subject: "c:globex", decision: { allowed: true } },
    });
    expect(body.descriptors[1]).toMatchObject({ verdict: "uncovered", live: null });
    const invalid = await explain("explain", ["remote_address=not-an-address"]);
    expect(invalid.descriptors[0]).toMatchObject({
      verdict: "invalid",
      problem: "descriptors[0].entries[0].value: is not an IP address",
    });
    expect(invalid.overallCode).toBeNull();
  });
});

describe("the live state follows the service's counters", () => {
  it("an enforced rule: remaining until the service spends it, then OVER_LIMIT for both", async () => {
    const tenant = `tenant=acme`;
    const before = await explain("explain", [tenant]);
    // `remaining` is what would be left after one more call.
    expect(before.descriptors[0].live).toMatchObject({ allowed: true, limit: 1, remaining: 0 });
    expect(before.overallCode).toBe("OK");
    // Explaining spends nothing.
    expect((await explain("explain", [tenant])).descriptors[0].live.allowed).toBe(true);

    expect(await rls("explain", [tenant])).toBe("OK");
    const after = await explain("explain", [tenant]);
    expect(after.descriptors[0].live).toMatchObject({ allowed: false, remaining: 0 });
    expect(after.overallCode).toBe("OVER_LIMIT");
    expect(after.descriptors[0].explanation.join(" ")).toMatch(/would be rejected now/);
    expect(await rls("explain", [tenant])).toBe("OVER_LIMIT");
  });

  it("per-value counting: another value of a key-only level keeps its own counter", async () => {
    expect(await rls("explain", ["tenant=initech"])).toBe("OK");
    const initech = await explain("explain", ["tenant=initech"]);
    const hooli = await explain("explain", ["tenant=hooli"]);
    expect(initech.descriptors[0].live.remaining).toBe(1);
    expect(hooli.descriptors[0].live.remaining).toBe(2);
    expect(initech.descriptors[0].counter).not.toBe(hooli.descriptors[0].counter);
  });

  it("shadow mode: a would-reject that never makes the call OVER_LIMIT", async () => {
    expect(await rls("explain", ["trial=t1"])).toBe("OK");
    expect(await rls("explain", ["trial=t1"])).toBe("OK");
    const body = await explain("explain", ["trial=t1"]);
    expect(body.descriptors[0]).toMatchObject({
      verdict: "rule",
      rule: { mode: "dry-run" },
      live: { allowed: false },
    });
    expect(body.overallCode).toBe("OK");
    expect(body.descriptors[0].explanation.join(" ")).toMatch(/would-reject/);
  });

  it("any descriptor over makes the call over", async () => {
    const body = await explain("explain", ["tenant=hooli", "tenant=acme"]);
    expect(body.descriptors.map((d: { live: { allowed: boolean } }) => d.live.allowed)).toEqual([
      true,
      false,
    ]);
    expect(body.overallCode).toBe("OVER_LIMIT");
  });
});

describe("refusals", () => {
  it.each([
    [{ domain: "explain", descriptors: [] }, "descriptors"],
    [{ domain: "", descriptors: [[{ key: "a", value: "b" }]] }, "domain"],
    [{ domain: "explain", descriptors: [[{ key: "a" }]] }, "descriptors[0][0].value"],
    [{ domain: "explain", descriptors: [[{ key: "a", value: "b" }]], extra: 1 }, ""],
    [
      { domain: "explain", descriptors: [[{ key: "a", value: "b" }]], hitsAddend: -1 },
      "hitsAddend",
    ],
  ])("400 for %j", async (body, field) => {
    const response = await api.call("POST", "/api/v1/explain/descriptors", { as: viewer(), body });
    expect(response.status, response.text).toBe(400);
    if (field !== "") expect(response.text).toContain(field);
  });

  it("401 without a credential", async () => {
    const response = await api.call("POST", "/api/v1/explain/descriptors", {
      as: null,
      body: { domain: "explain", descriptors: [[{ key: "tenant", value: "acme" }]] },
    });
    expect(response.status).toBe(401);
  });
});
