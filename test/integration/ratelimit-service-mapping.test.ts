/**
 * The descriptor mapping and Envoy's per-descriptor limit override, end to end: a change made
 * through the API (`PUT /api/v1/descriptor-mappings`) is published with the policy and changes a
 * running service's answers without a restart; the override is applied only where the domain's
 * mapping allows it, otherwise ignored and counted by reason. One service process, called with a
 * client built from Envoy's protos.
 */
import { checkRateLimitContract } from "@limitplane/enforcer/testing";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { publishPendingSnapshots } from "@/lib/control/outbox/publish-pending-snapshots";
import { installDeps, systemClock } from "@/lib/server/composition";
import { createRedis } from "@/lib/server/redis";
import { provideApiHarness } from "./helpers/api-harness";
import { filePrefix, promSample, waitFor } from "./helpers/gateway-processes";
import {
  type RlsClient,
  type RlsReply,
  replyHeaders,
  rlsClient,
  type ServiceProcess,
  startService,
  waitForReady,
} from "./helpers/ratelimit-service-processes";

const api = provideApiHarness();
const prefix = filePrefix("rm");
let redis: Redis;
let service: ServiceProcess;
let client: RlsClient;

async function serviceVersion(): Promise<number | null> {
  const status = (await (await fetch(`${service.httpUrl}/healthz`)).json()) as {
    policy: { version: number } | null;
  };
  return status.policy?.version ?? null;
}

/** Replaces the mappings through the API and waits until the service applies the new version. */
async function putMappings(descriptorMappings: unknown[] | null): Promise<void> {
  const current = await api.call("GET", "/api/v1/descriptor-mappings", {
    as: { token: api.as("viewer").token },
  });
  const response = await api.call("PUT", "/api/v1/descriptor-mappings", {
    as: { token: api.as("admin").token },
    body: {
      expectedVersion: current.body.descriptorMappings.version,
      descriptorMappings,
      reason: "map the edge proxy",
    },
  });
  expect(response.status, response.text).toBe(200);
  const version: number | null = response.body.policyVersion;
  // The same mappings again change no entry, so no version: the service already has them.
  if (version === null) return;
  await waitFor(`the service to apply version ${version}`, async () =>
    (await serviceVersion()) === version ? true : undefined,
  );
}

async function metric(name: string, labels: Record<string, string>): Promise<number> {
  const text = await (await fetch(`${service.httpUrl}/metrics`)).text();
  return promSample(text, name, labels) ?? 0;
}

const keyRequest = (apiKey: string, limit?: { requests_per_unit: number; unit: string }) => ({
  domain: "edge",
  descriptors: [
    {
      entries: [
        { key: "x-api-key", value: apiKey },
        { key: "path", value: "/v1/things" },
      ],
      ...(limit === undefined ? {} : { limit }),
    },
  ],
});

beforeAll(async () => {
  redis = createRedis("control", { url: inject("redisUrl") });
  const db = api.db();
  const publisher = { db, redis, prefix, clock: systemClock };
  installDeps({ control: { db, publisher, clock: systemClock } });
  // The harness imported the example policy without publishing it.
  await publishPendingSnapshots(publisher, "wait");
  service = await startService({ prefix, id: "rls-mapping" });
  await waitForReady(service);
  client = rlsClient(service.grpcAddress);
});

afterAll(async () => {
  client?.close();
  await service?.stop();
  redis?.disconnect();
});

describe("the descriptor mapping comes from the policy", () => {
  it("a mapping changed through the API changes the running service's answers, with no restart", async () => {
    // The default mapping knows no `x-api-key` entry: the descriptor is not covered.
    const before = await client.shouldRateLimit(keyRequest("key-1"));
    expect(before.statuses[0]).toMatchObject({ code: "OK", current_limit: null });

    await putMappings([{ domain: "edge", customer: "x-api-key" }]);
    const after = await client.shouldRateLimit(keyRequest("key-1"));
    expect(after.statuses[0]?.current_limit?.name).toMatch(/^tier:/);
    expect(replyHeaders(after)["ratelimit-policy"]).toContain("tier:");
    // `customer_id` is no longer the customer on edge, and no mapping covers another domain.
    const byOldKey = await client.shouldRateLimit({
      domain: "edge",
      descriptors: [{ entries: [{ key: "customer_id", value: "key-1" }] }],
    });
    expect(byOldKey.statuses[0]?.current_limit).toBeNull();
    const otherDomain = await client.shouldRateLimit({ ...keyRequest("key-1"), domain: "other" });
    expect(otherDomain.statuses[0]?.current_limit).toBeNull();
    expect(
      await metric("limitplane_service_uncovered_descriptors_total", {
        domain: "other",
        keys: "x-api-key,path",
      }),
    ).toBe(1);
  });
});

describe("a descriptor's limit override", () => {
  it("is ignored while the domain's mapping says ignore, and counted as not-allowed", async () => {
    await putMappings([{ domain: "edge", customer: "x-api-key" }]);
    const reply = await client.shouldRateLimit(
      keyRequest("ignored-1", { requests_per_unit: 1, unit: "HOUR" }),
    );
    expect(reply.statuses[0]?.current_limit?.name).toMatch(/^tier:/);
    expect(
      await metric("limitplane_service_ignored_limit_overrides_total", {
        domain: "edge",
        reason: "not-allowed",
      }),
    ).toBe(1);
  });

  it("replaces the policy's limit where the mapping says apply: 2 an hour gives OK, OK, OVER_LIMIT with the 429 contract", async () => {
    await putMappings([{ domain: "edge", customer: "x-api-key", limitOverride: "apply" }]);
    const limit = { requests_per_unit: 2, unit: "HOUR" };
    const replies: RlsReply[] = [];
    for (let i = 0; i < 3; i++)
      replies.push(await client.shouldRateLimit(keyRequest("ov-1", limit)));
    expect(replies.map((reply) => reply.overall_code)).toEqual(["OK", "OK", "OVER_LIMIT"]);
    expect(replies.map((reply) => reply.statuses[0]?.limit_remaining)).toEqual([1, 0, 0]);
    const over = replies[2] as RlsReply;
    expect(over.statuses[0]?.current_limit).toEqual({
      name: "descriptor-limit:3600000ms",
      requests_per_unit: 2,
      unit: "HOUR",
    });
    const headers = replyHeaders(over);
    checkRateLimitContract({
      status: 429,
      header: (name) => headers[name],
      bodyText: over.raw_body.toString("utf8"),
    });
    // Another key, or another unit, is another counter.
    expect((await client.shouldRateLimit(keyRequest("ov-2", limit))).overall_code).toBe("OK");
    expect(
      (await client.shouldRateLimit(keyRequest("ov-1", { requests_per_unit: 2, unit: "DAY" })))
        .overall_code,
    ).toBe("OK");
    expect(
      await metric("limitplane_service_descriptors_total", {
        domain: "edge",
        rule: "limit-override",
        code: "OVER_LIMIT",
      }),
    ).toBe(1);
  });

  it("0 requests per unit refuses every call; an UNKNOWN unit is ignored and counted", async () => {
    const zero = await client.shouldRateLimit(
      keyRequest("ov-3", { requests_per_unit: 0, unit: "SECOND" }),
    );
    expect(zero.overall_code).toBe("OVER_LIMIT");
    expect(zero.statuses[0]?.current_limit).toMatchObject({ requests_per_unit: 0, unit: "SECOND" });
    const unknown = await client.shouldRateLimit(
      keyRequest("ov-4", { requests_per_unit: 1, unit: "UNKNOWN" }),
    );
    expect(unknown.statuses[0]?.current_limit?.name).toMatch(/^tier:/);
    expect(
      await metric("limitplane_service_ignored_limit_overrides_total", {
        domain: "edge",
        reason: "unit",
      }),
    ).toBe(1);
  });
});
