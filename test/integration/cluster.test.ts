/**
 * The control plane and a demo gateway on a real Redis Cluster (three masters, started by this
 * file on free ports; the shared Redis is never touched): the policy service's publication, a
 * gateway configured by REDIS_CLUSTER_NODES enforcing exactly, and every read and write the
 * console and the worker make: the fleet's heartbeats, a customer's recent rejections, explain's
 * live-bucket peek, the sign-in limiter, the per-minute roll-up and the alert evaluation.
 */
import { once } from "node:events";
import { RedisStore } from "@limitplane/enforcer/limiter";
import type { RedisClient } from "@limitplane/enforcer/publication";
import { OwnRedisCluster, tokenBucket } from "@limitplane/enforcer/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { evaluateAlerts } from "@/lib/control/alerts/evaluate-alerts";
import { SignInLimiter } from "@/lib/control/auth/sign-in-limiter";
import type { ControlDeps } from "@/lib/control/deps";
import { explainLimits } from "@/lib/control/explain/explain-limits";
import { listEnforcers } from "@/lib/control/fleet/list-enforcers";
import { rollUpMetricMinutes } from "@/lib/control/metric-minute/roll-up-metric-minutes";
import { createTier } from "@/lib/control/tier/create-tier";
import { systemClock } from "@/lib/server/composition";
import { readCustomerRejections } from "@/lib/server/ops/customer-rejections";
import { createRedis } from "@/lib/server/redis";
import {
  filePrefix,
  type GatewayProcess,
  promSample,
  startGateway,
  waitFor,
  waitForVersion,
} from "./helpers/gateway-processes";
import { importExamplePolicy, operatorContext } from "./helpers/policy-fixtures";
import { provideTestDatabase } from "./helpers/test-database";

const database = provideTestDatabase();
const prefix = filePrefix("cl");
let cluster: OwnRedisCluster;
let redis: RedisClient;
let deps: ControlDeps;
let gateway: GatewayProcess;

beforeAll(async () => {
  cluster = await OwnRedisCluster.start(3);
  // REDIS_URL says how to talk to the nodes (no TLS, no password here); the nodes say where.
  redis = createRedis("control", { url: "redis://127.0.0.1", clusterNodes: cluster.nodes });
  if (redis.status !== "ready") await once(redis, "ready");
  const db = database.current().db;
  deps = { db, publisher: { db, redis, prefix, clock: systemClock }, clock: systemClock };
  await importExamplePolicy(deps);
  // A tier whose refill cannot interfere: 25 at once must admit exactly 20.
  const created = await createTier(
    { name: "still", displayName: "Still", limit: tokenBucket(20, 0.001) },
    operatorContext("a tier for the Cluster test"),
    deps,
  );
  expect(created.published).toBe(true);
  gateway = await startGateway({
    prefix,
    id: "cluster-gw",
    redisUrl: "redis://127.0.0.1:6379/0",
    env: { REDIS_CLUSTER_NODES: cluster.nodesText },
    args: ["--expected-gateways", "1"],
  });
  await waitForVersion([gateway], created.policyVersion ?? 0);
}, 120_000);

afterAll(async () => {
  await gateway?.stop();
  redis?.disconnect();
  await cluster?.stop();
});

describe("on a Redis Cluster", () => {
  it("a gateway configured by REDIS_CLUSTER_NODES admits exactly 20 of 25 simultaneous requests, none without Redis", async () => {
    const replies = await Promise.all(
      Array.from({ length: 25 }, () =>
        fetch(`${gateway.url}/v1/things`, {
          headers: { authorization: "Bearer globex", "x-tier": "still" },
        }),
      ),
    );
    expect(replies.filter((reply) => reply.status === 200)).toHaveLength(20);
    expect(replies.filter((reply) => reply.status === 429)).toHaveLength(5);
    const metrics = await (await fetch(`${gateway.url}/metrics`)).text();
    for (const reason of ["store-error", "timeout", "circuit-open"]) {
      expect(promSample(metrics, "limitplane_decisions_without_store_total", { reason })).toBe(0);
    }
  });

  it("the console's reads and the worker's jobs work on it: fleet, rejections, explain's peek, sign-in, roll-up, alerts", async () => {
    const fleet = await waitFor("the gateway's heartbeat", async () => {
      const found = await listEnforcers({ redis, prefix, clock: systemClock });
      return found.enforcers.some((enforcer) => enforcer.id === "cluster-gw") ? found : undefined;
    });
    expect(fleet.enforcers.find((enforcer) => enforcer.id === "cluster-gw")).toMatchObject({
      versionsBehind: 0,
      decisionsWithoutStore: { storeError: 0, timeout: 0, circuitOpen: 0 },
    });

    const rejections = await waitFor("the flushed rejections", async () => {
      const listed = await readCustomerRejections("globex", 50, { redis, prefix });
      return listed.reduce((sum, entry) => sum + entry.count, 0) === 5 ? listed : undefined;
    });
    expect(rejections.every((rejection) => rejection.scope === "tier:still")).toBe(true);

    const explained = await explainLimits(
      { customerId: "globex", tier: "still", path: "/v1/things" },
      {
        db: deps.db,
        store: new RedisStore({ client: redis, keyPrefix: prefix }),
        clock: systemClock,
      },
    );
    const account = explained.checks.find((check) => check.scope === "tier:still");
    expect(account?.live).toMatchObject({ allowed: false, remaining: 0 });

    const failures: unknown[] = [];
    const limiter = new SignInLimiter({
      store: new RedisStore({ client: redis, keyPrefix: `${prefix}signin:` }),
      secret: "a-secret-of-at-least-thirty-two-characters",
      onStoreFailure: (error) => failures.push(error),
    });
    const attempt = { address: "203.0.113.9", email: "dana@example.com" };
    for (let guess = 0; guess < 5; guess++) {
      await limiter.verify(attempt, () => Promise.resolve(false));
    }
    // The pair's bucket of 5 failures is used up, on the Cluster (not the local fallback).
    await expect(limiter.verify(attempt, () => Promise.resolve(true))).rejects.toMatchObject({
      code: "RATE_LIMITED",
    });
    expect(failures).toEqual([]);

    // The roll-up reads the minute once it is complete: look from two minutes on.
    const later = Date.now() + 120_000;
    const rolled = await rollUpMetricMinutes(
      { db: deps.db, redis, prefix, clock: { nowMs: () => later } },
      { retentionDays: 30, readThroughMinute: Math.floor(Date.now() / 60_000) - 3 },
    );
    expect(rolled.rowsWritten).toBeGreaterThan(0);
    const rows = await deps.db.metricMinute.findMany({ where: { scope: "tier:still" } });
    expect(rows.reduce((sum, row) => sum + row.allowed + row.rejected, 0)).toBe(25);

    const alerts = await evaluateAlerts(
      { nowMs: Date.now() + 60_000 },
      { db: deps.db, live: { redis, prefix } },
    );
    expect(alerts.alerts.filter((alert) => alert.kind === "degraded-decisions")).toEqual([]);
  });
});
