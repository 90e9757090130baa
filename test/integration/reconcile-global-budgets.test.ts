/**
 * The reconciler's rounds against real Redis servers (one per region) and the real policy in
 * Postgres, its clock and its apply wait driven by the test: the decreases are in Redis before
 * the wait and the increases only after it; an unreachable region is written nothing and its
 * share stays frozen until its lease and the skew have passed.
 */
import {
  formatGlobalShare,
  globalBudgetRedisNames,
  parseGlobalShare,
} from "@limitplane/enforcer/publication";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ControlDeps } from "@/lib/control/deps";
import { GlobalBudgetReconciler } from "@/lib/control/region/reconcile-global-budgets";
import { createTier } from "@/lib/control/tier/create-tier";
import { systemClock } from "@/lib/server/composition";
import { filePrefix, type PrivateRedis, privateRedis } from "./helpers/gateway-processes";
import { importExamplePolicy, operatorContext } from "./helpers/policy-fixtures";
import { provideTestDatabase } from "./helpers/test-database";

const database = provideTestDatabase();
const prefix = filePrefix("rgb");
const names = globalBudgetRedisNames(prefix);
const SCOPE = "tier:shared";
const SETTINGS = {
  intervalMs: 1_000,
  leaseMs: 2_000,
  skewMs: 100,
  applyMs: 300,
  floorShare: 0.02,
  // Generous: the test's clock is driven, and a loaded machine must not make a region unreachable.
  timeoutMs: 2_000,
};

let servers: PrivateRedis[] = [];
let clients: Redis[] = [];
let deps: ControlDeps;

beforeAll(async () => {
  deps = { db: database.current().db, publisher: null, clock: systemClock };
  await importExamplePolicy(deps);
  await createTier(
    {
      name: "shared",
      limit: { algorithm: "token-bucket", capacity: 100, refillPerSec: 10, global: true },
    },
    operatorContext("a global tier"),
    deps,
  );
  servers = await Promise.all([privateRedis(), privateRedis()]);
  clients = servers.map((server) => {
    const client = new Redis(server.url, { maxRetriesPerRequest: 1 });
    client.on("error", () => {});
    return client;
  });
  await Promise.all(clients.map((client) => client.ping()));
}, 60_000);

afterAll(async () => {
  for (const client of clients) client.disconnect();
  await Promise.all(servers.map((server) => server.stop()));
});

async function shareIn(client: Redis | undefined) {
  return parseGlobalShare((await client?.get(names.share(SCOPE))) ?? null);
}

describe("GlobalBudgetReconciler", () => {
  it("writes the decreases before the apply wait and the increases after it", async () => {
    const [eu, us] = clients;
    if (eu === undefined || us === undefined) throw new Error("no regions");
    const clock = { ms: 1_000_000, nowMs: () => clock.ms };
    const seenAtWait: unknown[] = [];
    const reconciler = new GlobalBudgetReconciler(
      {
        db: deps.db,
        regions: [
          { name: "eu", redis: eu },
          { name: "us", redis: us },
        ],
        prefix,
        clock,
        async sleep(ms) {
          seenAtWait.push({ ms, eu: await shareIn(eu), us: await shareIn(us) });
        },
      },
      SETTINGS,
    );
    // First round: no demand read yet, an even split.
    const first = await reconciler.run();
    expect(first.scopes).toContain(SCOPE);
    expect(first.unreachable).toEqual([]);
    expect((await shareIn(eu))?.share).toBe(0.5);
    expect((await shareIn(us))?.share).toBe(0.5);

    // eu sends 90 units in the next second, us 10: eu is raised, us lowered.
    await eu.incrbyfloat(names.demand(SCOPE), 90);
    await us.incrbyfloat(names.demand(SCOPE), 10);
    clock.ms += 1_000;
    seenAtWait.length = 0;
    const second = await reconciler.run();
    expect(second.isIncreased).toBe(true);
    // At the wait, us already holds its decrease and eu still its old share.
    // 0.02 each and the other 0.96 split 90/10.
    expect(seenAtWait).toEqual([
      {
        ms: 300,
        eu: { share: 0.5, leaseExpiresAtMs: 1_002_000, floorShare: 0.02 },
        us: { share: expect.closeTo(0.116, 8), leaseExpiresAtMs: 1_003_000, floorShare: 0.02 },
      },
    ]);
    expect(await shareIn(eu)).toEqual({
      share: expect.closeTo(0.884, 8),
      leaseExpiresAtMs: 1_003_000,
      floorShare: 0.02,
    });
  });

  it("writes nothing to a region it cannot reach and keeps its share until the lease ends", async () => {
    const [eu, us] = clients;
    const usServer = servers[1];
    if (eu === undefined || us === undefined || usServer === undefined) throw new Error("none");
    const clock = { ms: 2_000_000, nowMs: () => clock.ms };
    await us.set(
      names.share(SCOPE),
      formatGlobalShare({ share: 0.7, leaseExpiresAtMs: 2_001_000, floorShare: 0.02 }),
    );
    await eu.set(
      names.share(SCOPE),
      formatGlobalShare({ share: 0.3, leaseExpiresAtMs: 2_001_000, floorShare: 0.02 }),
    );
    const reconciler = new GlobalBudgetReconciler(
      {
        db: deps.db,
        regions: [
          { name: "eu", redis: eu },
          { name: "us", redis: us },
        ],
        prefix,
        clock,
        sleep: async () => {},
      },
      SETTINGS,
    );
    await reconciler.run();
    usServer.pause();
    try {
      // Within the lease and the skew: us frozen at 0.7, eu gets no more than the rest.
      clock.ms = 2_001_099;
      const frozen = await reconciler.run();
      expect(frozen.unreachable).toEqual(["us"]);
      const during = frozen.allotments.get(SCOPE)?.regions;
      expect(during?.find((entry) => entry.region === "us")).toMatchObject({
        share: expect.closeTo(0.5, 9),
        status: "frozen",
      });
      // Its lease over by the skew too: counted at the floor, the rest lent to eu.
      clock.ms = 2_004_200;
      const released = await reconciler.run();
      const after = released.allotments.get(SCOPE)?.regions;
      expect(after?.find((entry) => entry.region === "us")).toMatchObject({
        share: 0.02,
        status: "floor",
      });
      expect(after?.find((entry) => entry.region === "eu")?.share).toBeCloseTo(0.98, 9);
    } finally {
      usServer.resume();
    }
  });
});
