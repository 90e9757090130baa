/**
 * Reading each global limit's share per region for the console (read-global-shares.ts), against
 * the real Postgres and Redis: nothing while no limit is global; then the shares the worker would
 * have written, a lease that has ended read as none, and a region that does not answer named
 * while the others are still read.
 */
import { formatGlobalShare, globalBudgetRedisNames } from "@limitplane/enforcer/publication";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { ControlDeps } from "@/lib/control/deps";
import { readGlobalShares } from "@/lib/control/region/read-global-shares";
import { createTier } from "@/lib/control/tier/create-tier";
import { filePrefix } from "./helpers/gateway-processes";
import { importExamplePolicy, operatorContext, uniqueName } from "./helpers/policy-fixtures";
import { provideTestDatabase } from "./helpers/test-database";

const database = provideTestDatabase();
const NOW_MS = 1_800_000_000_000;
let east: Redis;
let west: Redis;
let down: Redis;
let deps: ControlDeps;

beforeAll(async () => {
  east = new Redis(inject("redisUrl"));
  // Another logical database of the same server: a region of its own, with its own keys.
  west = new Redis(inject("redisUrl"));
  await west.select(1);
  // Nothing listens on port 1: the region does not answer, at once (no queue, no retry).
  down = new Redis({
    port: 1,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  deps = { db: database.current().db, publisher: null, clock: { nowMs: () => NOW_MS } };
  await importExamplePolicy(deps);
});

afterAll(() => {
  east.disconnect();
  west.disconnect();
  down.disconnect();
});

describe("global shares per region", () => {
  it("are none while no limit is global, then each region's share of each global limit", async () => {
    const prefix = filePrefix("gs");
    const regions = [
      { region: "us-east", redis: east },
      { region: "us-west", redis: west },
      { region: "eu-west", redis: down },
    ];
    const read = () => readGlobalShares({ db: deps.db, regions, prefix, clock: deps.clock });
    expect(await read()).toEqual({ limits: [], unreadable: [] });

    const tier = uniqueName("world");
    await createTier(
      {
        name: tier,
        limit: { algorithm: "token-bucket", capacity: 300, refillPerSec: 100, global: true },
      },
      operatorContext("a global tier"),
      deps,
    );
    const key = globalBudgetRedisNames(prefix).share(`tier:${tier}`);
    await east.set(
      key,
      formatGlobalShare({ share: 0.7, leaseExpiresAtMs: NOW_MS + 2000, floorShare: 0.02 }),
    );
    // us-west's lease ended a millisecond ago: its enforcers are on the floor.
    await west.set(
      key,
      formatGlobalShare({ share: 0.3, leaseExpiresAtMs: NOW_MS - 1, floorShare: 0.02 }),
    );
    try {
      const shares = await read();
      expect(shares.limits).toEqual([
        {
          scope: `tier:${tier}`,
          regions: [
            { region: "us-east", share: 0.7, floorShare: 0.02 },
            { region: "us-west", share: null, floorShare: 0.02 },
          ],
        },
      ]);
      expect(shares.unreadable).toHaveLength(1);
      expect(shares.unreadable[0]?.region).toBe("eu-west");

      await west.del(key);
      const unwritten = await readGlobalShares({
        db: deps.db,
        regions: regions.slice(0, 2),
        prefix,
        clock: deps.clock,
      });
      expect(unwritten).toEqual({
        limits: [
          {
            scope: `tier:${tier}`,
            regions: [
              { region: "us-east", share: 0.7, floorShare: 0.02 },
              { region: "us-west", share: null, floorShare: null },
            ],
          },
        ],
        unreadable: [],
      });
    } finally {
      await east.del(key);
      await west.del(key);
    }
  });
});
