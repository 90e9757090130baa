/**
 * Per-rule counts: a real rate-limit service decides descriptor rules over gRPC and reports each
 * rule's decisions under its scope (`descriptor:<id>`) into the per-minute counts the console
 * charts, as a gateway reports a tier's: rejections of an enforced rule, would-rejects of a
 * shadow-mode rule (like a dry-run candidate's). The console's chart math then draws them.
 */
import {
  compileSnapshot,
  parsePolicyDocument,
  type TDescriptorRuleInput,
} from "@limitplane/enforcer/policy";
import { examplePolicyInput, publishTestSnapshot } from "@limitplane/enforcer/testing";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { buildDryRunSeries, buildRejectionRateSeries, CHART_RANGES } from "@/lib/console";
import { loadScopeMinutes } from "@/lib/control/metric-minute/load-scope-minutes";
import { createRedis } from "@/lib/server/redis";
import { filePrefix } from "./helpers/gateway-processes";
import {
  type RlsClient,
  rlsClient,
  type ServiceProcess,
  startService,
  waitForReady,
} from "./helpers/ratelimit-service-processes";
import { provideTestDatabase } from "./helpers/test-database";

const database = provideTestDatabase();
const prefix = filePrefix("rc");
const DAY_MS = 86_400_000;
const DOMAIN = "counted";
const ENFORCED = "descriptor:capped";
const SHADOW = "descriptor:shadowed";

const RULES: TDescriptorRuleInput[] = [
  {
    id: "capped",
    domain: DOMAIN,
    descriptor: [{ key: "tenant" }],
    limit: { algorithm: "fixed-window", limit: 2, windowMs: DAY_MS },
  },
  {
    id: "shadowed",
    domain: DOMAIN,
    descriptor: [{ key: "trial" }],
    limit: { algorithm: "fixed-window", limit: 1, windowMs: DAY_MS },
    mode: "dry-run",
  },
];

let redis: Redis;
let service: ServiceProcess;
let client: RlsClient;

async function codes(key: string, value: string, count: number): Promise<string[]> {
  const result: string[] = [];
  for (let i = 0; i < count; i++) {
    const reply = await client.shouldRateLimit({
      domain: DOMAIN,
      hits_addend: 0,
      descriptors: [{ entries: [{ key, value }] }],
    });
    result.push(reply.overall_code);
  }
  return result;
}

beforeAll(async () => {
  redis = createRedis("control", { url: inject("redisUrl") });
  const parsed = parsePolicyDocument({ ...examplePolicyInput(), descriptorRules: RULES });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors.slice(0, 3)));
  await publishTestSnapshot(
    redis,
    prefix,
    compileSnapshot(parsed.value, { version: 1, compiledAt: new Date().toISOString() }),
  );
  service = await startService({ prefix, id: "rls-counts", args: ["--no-leases"] });
  await waitForReady(service);
  client = rlsClient(service.grpcAddress);
});

afterAll(async () => {
  client?.close();
  await service?.stop();
  redis?.disconnect();
});

describe("a descriptor rule's decisions in the per-minute counts", () => {
  it("counts an enforced rule's rejections and a shadow rule's would-rejects, and the charts draw them", async () => {
    const startMs = Date.now();
    expect(await codes("tenant", "acme", 5)).toEqual([
      "OK",
      "OK",
      "OVER_LIMIT",
      "OVER_LIMIT",
      "OVER_LIMIT",
    ]);
    expect(await codes("trial", "t1", 4)).toEqual(["OK", "OK", "OK", "OK"]);

    const read = async () => {
      const nowMs = Date.now();
      const minutes = await loadScopeMinutes(
        { fromMs: startMs - 120_000, nowMs, scopes: [ENFORCED, SHADOW] },
        { db: database.current().db, live: { redis, prefix } },
      );
      const totals = (scope: string) =>
        minutes.rows
          .filter((row) => row.scope === scope)
          .reduce(
            (sum, row) => ({
              allowed: sum.allowed + row.allowed,
              rejected: sum.rejected + row.rejected,
              wouldReject: sum.wouldReject + row.wouldReject,
            }),
            { allowed: 0, rejected: 0, wouldReject: 0 },
          );
      return { nowMs, minutes, enforced: totals(ENFORCED), shadow: totals(SHADOW) };
    };
    // The service flushes its counts every second: wait for what the console would show.
    await expect
      .poll(async () => {
        const { enforced, shadow } = await read();
        return { enforced, shadow };
      })
      .toEqual({
        enforced: { allowed: 2, rejected: 3, wouldReject: 0 },
        shadow: { allowed: 1, rejected: 0, wouldReject: 3 },
      });

    const { nowMs, minutes } = await read();
    const range = CHART_RANGES["1h"];
    const window = { nowMs, includeCurrentBucket: true };
    const rates = buildRejectionRateSeries(minutes.rows, range, { ...window, scopes: [ENFORCED] });
    expect(rates.series[0]).toMatchObject({
      scope: ENFORCED,
      totalRequests: 5,
      totalRejected: 3,
    });
    const shadow = buildDryRunSeries(minutes.rows, range, {
      ...window,
      pairs: [{ enforcedScope: SHADOW, dryRunScope: SHADOW }],
    });
    expect(shadow.series[0]).toMatchObject({ totalBlocked: 0, totalWouldBlock: 3 });
  });
});
