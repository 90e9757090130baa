/**
 * The incident operator's readers: every customer override paged by scope (Postgres), and the
 * enforcers' heartbeats and a customer's recent rejections as the console reads them (Redis).
 */
import { randomBytes } from "node:crypto";
import { enforcerRedisNames, type RedisClient } from "@limitplane/enforcer/publication";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCustomer } from "@/lib/control/customer/create-customer";
import { createCustomerOverride } from "@/lib/control/customer-override/create-customer-override";
import { listAllCustomerOverrides } from "@/lib/control/customer-override/list-all-customer-overrides";
import type { ControlDeps } from "@/lib/control/deps";
import { listEnforcers } from "@/lib/control/fleet/list-enforcers";
import { systemClock } from "@/lib/server/composition";
import { readCustomerRejections } from "@/lib/server/ops/customer-rejections";
import type { OpsRedisDeps } from "@/lib/server/ops/ops-redis";
import { readyRedis } from "../support/redis";
import {
  depsFor,
  importExamplePolicy,
  operatorContext,
  uniqueName,
} from "./helpers/policy-fixtures";
import { provideTestDatabase } from "./helpers/test-database";

const database = provideTestDatabase();
let deps: ControlDeps;
let redis: RedisClient;
let ops: OpsRedisDeps;

beforeAll(async () => {
  deps = depsFor(database.current().db);
  await importExamplePolicy(deps);
  redis = await readyRedis("control");
  ops = { redis, prefix: `${process.env.REDIS_KEY_PREFIX}ops-${randomBytes(4).toString("hex")}:` };
});

afterAll(async () => {
  await redis.quit();
});

describe("listAllCustomerOverrides", () => {
  it("pages every customer's overrides by scope, each exactly once, ending with a null cursor", async () => {
    const limit = { algorithm: "token-bucket" as const, capacity: 400, refillPerSec: 40 };
    const created: string[] = [];
    for (let index = 0; index < 3; index++) {
      const id = uniqueName("ovr");
      await createCustomer(
        { id, displayName: `Overrides ${index}`, tier: "pro" },
        operatorContext(),
        deps,
      );
      await createCustomerOverride(
        { customerId: id, endpointClass: null, limit },
        operatorContext(),
        deps,
      );
      await createCustomerOverride(
        { customerId: id, endpointClass: "search", limit },
        operatorContext(),
        deps,
      );
      created.push(`customer:${id}`, `customer:${id}/endpoint:search`);
    }
    const seen: string[] = [];
    let after: string | undefined;
    for (let page = 0; page < 20; page++) {
      const result = await listAllCustomerOverrides({ after, limit: 2 }, deps);
      expect(result.overrides.length).toBeLessThanOrEqual(2);
      seen.push(...result.overrides.map((override) => override.scope));
      if (result.nextCursor === null) break;
      after = result.nextCursor;
    }
    // The example policy's globex override, then ours: sorted, no duplicates, none missing.
    expect(seen).toEqual([...seen].sort());
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(expect.arrayContaining([...created, "customer:globex/endpoint:reports"]));
    expect(seen).toHaveLength(created.length + 1);
  });

  it("refuses a malformed cursor with a field error", async () => {
    await expect(listAllCustomerOverrides({ after: "" }, deps)).rejects.toMatchObject({
      code: "VALIDATION_FAILED",
    });
  });
});

describe("listEnforcers with a liveness window (the incident page's confirmations)", () => {
  it("lists enforcers with a recent heartbeat and the version each runs; stale and expired ones are left out", async () => {
    const names = enforcerRedisNames(ops.prefix);
    const nowMs = 1_800_000_000_000;
    const beat = (id: string, heartbeatAtMs: number, version: string) =>
      redis
        .multi()
        .hset(names.enforcer(id), {
          id,
          host: "test-host",
          heartbeatAt: String(heartbeatAtMs),
          version,
          appliedAt: version === "" ? "" : String(heartbeatAtMs - 500),
          appliedVia: version === "" ? "" : "announce",
        })
        .zadd(names.enforcers, heartbeatAtMs, id)
        .exec();
    await beat("gw-b", nowMs - 1_000, "7");
    await beat("gw-a", nowMs - 2_000, "");
    await beat("gw-stale", nowMs - 60_000, "6");
    // In the set but its hash expired: stopped beating.
    await redis.zadd(names.enforcers, nowMs - 500, "gw-gone");

    const fleet = await listEnforcers(
      { redis, prefix: ops.prefix, clock: { nowMs: () => nowMs } },
      { liveWithinMs: 15_000 },
    );
    expect(
      fleet.enforcers
        .map(({ id, host, version, heartbeatAtMs, appliedAtMs, appliedVia }) => ({
          id,
          host,
          version,
          heartbeatAtMs,
          appliedAtMs,
          appliedVia,
        }))
        .sort((a, b) => (a.id < b.id ? -1 : 1)),
    ).toEqual([
      {
        id: "gw-a",
        host: "test-host",
        version: null,
        heartbeatAtMs: nowMs - 2_000,
        appliedAtMs: null,
        appliedVia: null,
      },
      {
        id: "gw-b",
        host: "test-host",
        version: 7,
        heartbeatAtMs: nowMs - 1_000,
        appliedAtMs: nowMs - 1_500,
        appliedVia: "announce",
      },
    ]);
  });

  it("is empty when no enforcer has ever beaten", async () => {
    const fleet = await listEnforcers({
      redis,
      prefix: `${ops.prefix}none:`,
      clock: systemClock,
    });
    expect(fleet.enforcers).toEqual([]);
  });
});

describe("readCustomerRejections", () => {
  it("reads the enforcers' list newest first, with counts (one for an entry from before them), skipping entries that do not parse", async () => {
    const key = enforcerRedisNames(ops.prefix).rejections("acme");
    await redis.lpush(
      key,
      JSON.stringify({
        atMs: 1_000,
        scope: "tier:pro",
        endpointClass: "search",
        enforcerId: "gw-1",
      }),
      "not json",
      JSON.stringify({
        atMs: 3_000,
        scope: "incident:inc-1",
        endpointClass: null,
        enforcerId: "gw-2",
      }),
      JSON.stringify({ atMs: "soon", scope: "tier:pro" }),
      JSON.stringify({ atMs: 4_000, count: 0, scope: "tier:pro", endpointClass: null }),
      JSON.stringify({
        atMs: 2_000,
        firstAtMs: 1_500,
        count: 7,
        scope: "ceiling",
        endpointClass: "default",
        enforcerId: "gw-1",
      }),
    );
    expect(await readCustomerRejections("acme", 50, ops)).toEqual([
      {
        atMs: 3_000,
        firstAtMs: 3_000,
        count: 1,
        scope: "incident:inc-1",
        endpointClass: null,
        enforcerId: "gw-2",
      },
      {
        atMs: 2_000,
        firstAtMs: 1_500,
        count: 7,
        scope: "ceiling",
        endpointClass: "default",
        enforcerId: "gw-1",
      },
      {
        atMs: 1_000,
        firstAtMs: 1_000,
        count: 1,
        scope: "tier:pro",
        endpointClass: "search",
        enforcerId: "gw-1",
      },
    ]);
    expect(await readCustomerRejections("nobody", 50, ops)).toEqual([]);
  });
});
