/**
 * Regions suite: what a global limit costs a decision. One enforcer in this process, following a
 * policy published to the bench's own Redis with two tiers of the same token bucket (1e6 + 1e6/s,
 * so every request is admitted): `regional` (a per-region limit) and `worldwide` (`global: true`,
 * its share written as the worker would, 1/3 with a lease far ahead). Each run decides the same
 * requests (1,000 customers, round robin) for each tier, alternating which goes first, and
 * measures decisions per second; the ratio per run is regional / worldwide time per decision.
 *
 * Measured twice: with leases off (every decision one Redis call on both sides: the cost of the
 * share, the demand count and the scaled check), which the target reads (aim: at most 1.1x), and
 * with leases on, where a per-region limit is answered from leases and a global one never is
 * (printed, not a target: that difference is the design's, docs/redis-store.md).
 *
 * Then the overshoot and under-admission of global budgets against docs/regions.md's formula, for
 * 3 regions and a skewed, shifting load, with real processes (global-budget-bounds.ts).
 */
import { createEnforcer, type Enforcer, type EnforcerLogger } from "@limitplane/enforcer";
import { formatGlobalShare, globalBudgetRedisNames } from "@limitplane/enforcer/publication";
import { exampleSnapshot, publishTestSnapshot } from "@limitplane/enforcer/testing";
import { Redis } from "ioredis";
import { benchRedis, describeRedis, loadLine, MIN_RUNS, pairedRatios, summary } from "./fair";
import { measureGlobalBudgetBounds } from "./global-budget-bounds";
import { Targets } from "./results";

const silentLogger: EnforcerLogger = { log() {} };
const CUSTOMERS = 1_000;
const DECISIONS = 20_000;
const IN_FLIGHT = 64;
const SIZE = 1_000_000;

function snapshot() {
  return exampleSnapshot(
    (policy) => {
      const limit = { algorithm: "token-bucket" as const, capacity: SIZE, refillPerSec: SIZE };
      policy.tiers.push(
        { name: "regional", displayName: "Regional (bench)", limit },
        { name: "worldwide", displayName: "Worldwide (bench)", limit: { ...limit, global: true } },
      );
      policy.ceilings.perCustomer = limit;
    },
    { version: 1 },
  );
}

/** Decides DECISIONS requests of `tier`, IN_FLIGHT at a time; returns microseconds per decision. */
async function decide(enforcer: Enforcer, tier: string, round: number): Promise<number> {
  let next = 0;
  let admitted = 0;
  const startedAtMs = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < DECISIONS) {
        const index = next++;
        const result = await enforcer.check({
          customerId: `r${round}-c${index % CUSTOMERS}`,
          tier,
          method: "GET",
          path: "/v1/things",
        });
        if (result.decision.allowed) admitted++;
      }
    }),
  );
  const elapsedMs = performance.now() - startedAtMs;
  if (admitted !== DECISIONS) throw new Error(`${tier}: ${DECISIONS - admitted} rejected`);
  return (elapsedMs * 1000) / DECISIONS;
}

async function measure(
  url: string,
  prefix: string,
  leases: boolean,
): Promise<{ regional: number[]; worldwide: number[] }> {
  const enforcer = await createEnforcer({
    expectedGateways: 1,
    redis: { url, keyPrefix: prefix },
    enforcerId: `bench-regions-${leases ? "leases" : "plain"}`,
    logger: silentLogger,
    ...(leases ? {} : { leases: false }),
    local: false,
  });
  const regional: number[] = [];
  const worldwide: number[] = [];
  try {
    // Warm-up: both paths compiled, the share read.
    await decide(enforcer, "regional", -1);
    await decide(enforcer, "worldwide", -1);
    for (let run = 0; run < MIN_RUNS; run++) {
      const order = run % 2 === 0 ? ["regional", "worldwide"] : ["worldwide", "regional"];
      for (const tier of order) {
        const micros = await decide(enforcer, tier, run);
        (tier === "regional" ? regional : worldwide).push(micros);
      }
    }
  } finally {
    await enforcer.stop();
  }
  return { regional, worldwide };
}

export async function run(): Promise<void> {
  const redis = await benchRedis();
  console.log(`Redis: ${describeRedis(redis)}`);
  console.log(loadLine("at start"));
  const prefix = `bench:rg${Date.now()}:`;
  const client = new Redis(redis.url);
  const targets = new Targets();
  try {
    await publishTestSnapshot(client, prefix, snapshot());
    // The worker's share for this region, with a lease an hour ahead.
    await client.set(
      globalBudgetRedisNames(prefix).share("tier:worldwide"),
      formatGlobalShare({
        share: 1 / 3,
        leaseExpiresAtMs: Date.now() + 3_600_000,
        floorShare: 0.02,
      }),
    );
    for (const leases of [false, true]) {
      const { regional, worldwide } = await measure(redis.url, prefix, leases);
      const ratios = pairedRatios(worldwide, regional);
      console.log(
        `leases ${leases ? "on" : "off"}: regional ${summary(regional)} us, worldwide ${summary(worldwide)} us per decision; worldwide / regional ${summary(ratios)}x`,
      );
      if (!leases) {
        targets.atMost("global / per-region time per decision, leases off", ratios, 1.1);
      }
    }
    const demand = Number(
      await client.get(globalBudgetRedisNames(prefix).demand("tier:worldwide")),
    );
    const wanted = 2 * (MIN_RUNS + 1) * DECISIONS;
    targets.holds(
      "demand counted exactly",
      `${demand} of ${wanted}`,
      demand === wanted,
      "every decision",
    );
  } finally {
    client.disconnect();
    await redis.stop();
  }
  await measureGlobalBudgetBounds(targets);
  console.log(loadLine("at end"));
  targets.print("regions targets");
}
