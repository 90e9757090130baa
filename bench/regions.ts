/**
 * Regions suite: what a global limit costs a decision. One enforcer in this process, following a
 * policy published to the bench's own Redis with two tiers of the same token bucket (1e6 + 1e6/s,
 * so every request is admitted): `regional` (a per-region limit) and `worldwide` (`global: true`,
 * its share written as the worker would, 1/3 with a lease far ahead). Each run decides 20,000
 * requests of 1,000 customers (round robin) for each tier, alternating which goes first, and
 * measures decisions per second; the ratio per run is worldwide / regional time per decision.
 * Each tier has customers of its own, new in every run: the tiers share bucket names, so with
 * shared customers one tier decided on the keys the other had just written, with its lease
 * reservations and returns still in flight.
 *
 * Measured twice: with leases off (every decision one Redis call on both sides: the cost of the
 * share, the demand count and the scaled check), which the target reads (aim: at most 1.1x), and
 * with leases on, where a per-region limit is answered from leases and a global one never is
 * (printed with the share of decisions leases answered, not a target: that difference is the
 * design's, docs/redis-store.md). A customer is leased once seen 4 times in the whole lease
 * lifetime (1 s) before the current one, and a run's customers are new and last about half a
 * second: leases answer few per-region decisions here, more when a loaded machine stretches runs.
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

/**
 * Decides DECISIONS requests of `tier`, IN_FLIGHT at a time, for customers named after `tier`
 * and `run` (new keys in every run); returns microseconds per decision and how many of the
 * decisions a lease answered.
 */
async function decide(
  enforcer: Enforcer,
  tier: string,
  run: string,
): Promise<{ micros: number; leased: number }> {
  let next = 0;
  let admitted = 0;
  let leased = 0;
  const startedAtMs = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < DECISIONS) {
        const index = next++;
        const result = await enforcer.check({
          customerId: `${tier}-${run}-c${index % CUSTOMERS}`,
          tier,
          method: "GET",
          path: "/v1/things",
        });
        if (result.decision.allowed) admitted++;
        if (result.decision.source === "lease") leased++;
      }
    }),
  );
  const elapsedMs = performance.now() - startedAtMs;
  if (admitted !== DECISIONS) throw new Error(`${tier}: ${DECISIONS - admitted} rejected`);
  return { micros: (elapsedMs * 1000) / DECISIONS, leased };
}

async function measure(
  url: string,
  prefix: string,
  leases: boolean,
): Promise<{
  regional: number[];
  worldwide: number[];
  leased: { regional: number; worldwide: number };
}> {
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
  const leased = { regional: 0, worldwide: 0 };
  const phase = leases ? "l" : "p";
  try {
    // Warm-up: both paths compiled, the share read.
    await decide(enforcer, "regional", `${phase}w`);
    await decide(enforcer, "worldwide", `${phase}w`);
    for (let run = 0; run < MIN_RUNS; run++) {
      const order = run % 2 === 0 ? ["regional", "worldwide"] : ["worldwide", "regional"];
      for (const tier of order) {
        const decided = await decide(enforcer, tier, `${phase}${run}`);
        (tier === "regional" ? regional : worldwide).push(decided.micros);
        leased[tier === "regional" ? "regional" : "worldwide"] += decided.leased;
      }
    }
  } finally {
    await enforcer.stop();
  }
  return { regional, worldwide, leased };
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
      const { regional, worldwide, leased } = await measure(redis.url, prefix, leases);
      const leasedPercent = (100 * leased.regional) / (MIN_RUNS * DECISIONS);
      const ratios = pairedRatios(worldwide, regional);
      console.log(
        `leases ${leases ? "on" : "off"}: regional ${summary(regional)} us, worldwide ${summary(worldwide)} us per decision; worldwide / regional ${summary(ratios)}x; answered by a lease: ${leasedPercent.toFixed(1)}% of regional, ${leased.worldwide} worldwide`,
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
