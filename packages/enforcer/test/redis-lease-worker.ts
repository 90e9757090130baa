/**
 * One of the separate OS processes of redis-lease.race.test.ts: a DecisionEngine on its own
 * RedisStore (batching on) with leases on, as a gateway runs it. For every round read from
 * stdin (one JSON line) it sends its share of requests for the round's customer from several
 * concurrent loops, and writes one JSON line: how many it admitted, and what its leases did.
 * Run as `node --import tsx test/redis-lease-worker.ts` with REDIS_URL and LEASE_PREFIX set.
 */
import { createInterface } from "node:readline";
import { DecisionEngine } from "../src/enforcer/decision-engine";
import { RedisStore } from "../src/limiter/stores/redis";
import { prepareSnapshot } from "../src/policy/prepare";
import { exampleSnapshot, tokenBucket } from "../src/testing/policy-factory";
import { LEASE_RACE_CAPACITY, type LeaseReport, type LeaseRound } from "./redis-lease-rounds";
import { readyRedis } from "./support/redis";

const decisions = await readyRedis("decisions");
const snapshot = prepareSnapshot(
  exampleSnapshot((policy) => {
    const pro = policy.tiers.find((tier) => tier.name === "pro");
    if (pro === undefined) throw new Error("the example policy has no pro tier");
    pro.limit = tokenBucket(LEASE_RACE_CAPACITY, 0.001);
  }),
);
const engine = new DecisionEngine({
  store: new RedisStore({
    client: decisions,
    keyPrefix: process.env.LEASE_PREFIX ?? "",
    maxBatchSize: 64,
  }),
  snapshot: () => snapshot,
  expectedGateways: 3,
  // The local stage on, as gateways run by default: its denials and flood guard only reject.
  // Short lifetimes, so a round of a fraction of a second sees leases granted, spent, refilled
  // and ended (a subject is leased only after a whole lifetime of demand).
  leases: { lifeMs: 20 },
});

async function run(round: LeaseRound): Promise<LeaseReport> {
  const before = engine.leases?.figures();
  let admitted = 0;
  let fromLeases = 0;
  let sent = 0;
  await Promise.all(
    Array.from({ length: round.loops }, async () => {
      while (sent < round.share) {
        sent++;
        const result = await engine.check({
          customerId: round.customerId,
          tier: "pro",
          method: "GET",
          path: "/v1/things",
        });
        if (result.decision.allowed) admitted++;
        if (result.decision.source === "lease") fromLeases++;
      }
    }),
  );
  // A refill asked for near the end may still be on its way: its units are charged already.
  while ((engine.leases?.figures().inFlight ?? 0) > 0) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const after = engine.leases?.figures();
  return {
    admitted,
    fromLeases,
    grantedUnits: (after?.grantedUnits ?? 0) - (before?.grantedUnits ?? 0),
    expiredUnits: (after?.expiredUnits ?? 0) - (before?.expiredUnits ?? 0),
  };
}

const lines = createInterface({ input: process.stdin });
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
for await (const line of lines) {
  if (line === "stop") break;
  const report = await run(JSON.parse(line) as LeaseRound).catch(
    (error: unknown): LeaseReport => ({
      admitted: 0,
      fromLeases: 0,
      grantedUnits: 0,
      expiredUnits: 0,
      error: String(error),
    }),
  );
  process.stdout.write(`${JSON.stringify(report)}\n`);
}
decisions.disconnect();
