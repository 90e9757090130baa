/**
 * One of the separate OS processes of redis-lease.race.test.ts: a DecisionEngine on its own
 * RedisStore (batching on) with leases on, as a gateway runs it. For every round read from
 * stdin (one JSON line) it sends its share of requests for the round's customer from several
 * concurrent loops, waits until its leases have spent or given back every unit they were granted,
 * drains the bucket without leases when asked to, and writes one JSON line: how many it admitted,
 * what its leases did, and how many the drain admitted.
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
  // Short lifetimes, so a round of a fraction of a second sees leases granted, spent, refilled,
  // ended and given back (a subject is leased only after a whole lifetime of demand). The tier's
  // refill is negligible, so the loss bound is set as high as it goes for it to be leased.
  leases: { lifeMs: 20, maxLossMs: 86_400_000 },
});
/** The same gateway without leases: what drains the bucket after a round, exactly. */
const drainer = new DecisionEngine({
  store: new RedisStore({ client: decisions, keyPrefix: process.env.LEASE_PREFIX ?? "" }),
  snapshot: () => snapshot,
  expectedGateways: 3,
  leases: false,
  localStage: false,
});

/** Units granted to this gateway's leases that are neither spent nor settled yet. */
function unsettledUnits(admittedFromLeases: number): number {
  const figures = engine.leases?.figures();
  if (figures === undefined) return 0;
  return (
    figures.inFlight +
    figures.returningUnits +
    figures.grantedUnits -
    admittedFromLeases -
    figures.returnedUnits -
    figures.expiredUnits
  );
}

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
  // Refills asked for near the end may still be on the way, and grants still out: wait until
  // every unit granted was spent or given back (grants end within their 20 ms lifetime).
  while (unsettledUnits(totalFromLeases + fromLeases) > 0) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  totalFromLeases += fromLeases;
  const after = engine.leases?.figures();
  let drained = 0;
  if (round.drain) {
    // What the round left in the bucket, one request at a time, until the store says no.
    const drain = { customerId: round.customerId, tier: "pro", method: "GET", path: "/v1/things" };
    while ((await drainer.check(drain)).decision.allowed) drained++;
  }
  return {
    admitted,
    fromLeases,
    grantedUnits: (after?.grantedUnits ?? 0) - (before?.grantedUnits ?? 0),
    returnedUnits: (after?.returnedUnits ?? 0) - (before?.returnedUnits ?? 0),
    expiredUnits: (after?.expiredUnits ?? 0) - (before?.expiredUnits ?? 0),
    drained,
  };
}
let totalFromLeases = 0;

const lines = createInterface({ input: process.stdin });
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
for await (const line of lines) {
  if (line === "stop") break;
  const report = await run(JSON.parse(line) as LeaseRound).catch(
    (error: unknown): LeaseReport => ({
      admitted: 0,
      fromLeases: 0,
      grantedUnits: 0,
      returnedUnits: 0,
      expiredUnits: 0,
      drained: 0,
      error: String(error),
    }),
  );
  process.stdout.write(`${JSON.stringify(report)}\n`);
}
decisions.disconnect();
