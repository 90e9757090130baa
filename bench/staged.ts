/**
 * Staged-change suite: what a staged change costs the hot path.
 *
 * 1. Resolution, in process: `resolveLimits` (no trace) for 10,000 customers of the `wide` tier,
 *    each resolved once per pass as a gateway resolves each customer once per policy version
 *    (its resolution cache keeps the result), under the bench policy as is and with one staged
 *    change of the `wide` tier at 50 %: the staged change adds one hash per customer and splits
 *    the shared per-tier result in two. Both snapshots are prepared afresh for each pass.
 * 2. Decisions through the enforcer (`checkNow`, the Redis store of the bench's own redis-server
 *    or `BENCH_REDIS_URL`), 1,000 customers of the `wide` tier in turn, 64 in flight: the policy
 *    as is, where leases answer most requests in process, against a staged change at 100 %,
 *    where every request carries the replaced limit as a dry-run check and so goes to Redis
 *    (dry-run checks turn leases off: their counts must be exact).
 *
 * The two sides alternate within each run, which goes first alternating too; the figures are
 * ratios from the same run (staged over plain). Information only, no aim but sanity: resolution
 * with a staged change within 3x, and no request rejected (the `wide` tier admits everything).
 */
import { randomBytes } from "node:crypto";
import { createEnforcer, type EnforcerLogger } from "@limitplane/enforcer";
import { prepareSnapshot, resolveLimits, type TSnapshot } from "@limitplane/enforcer/policy";
import { deleteKeysUnder, publishTestSnapshot, tokenBucket } from "@limitplane/enforcer/testing";
import { Redis } from "ioredis";
import { benchRedis, describeRedis, loadLine, MIN_RUNS, pairedRatios, summary } from "./fair";
import { BENCH_LIMITS, benchSnapshot } from "./http-policy";
import { Targets } from "./results";

const RESOLVE_CUSTOMERS = 10_000;
const DECIDE_CUSTOMERS = 1_000;
const DECISIONS_PER_TRIAL = 20_000;
const IN_FLIGHT = 64;
const RUNS = Math.max(MIN_RUNS, 7);
const silentLogger: EnforcerLogger = { log() {} };

function stagedSnapshot(sliceBasisPoints: number, version: number): TSnapshot {
  const snapshot = benchSnapshot(version);
  const candidates = [
    ...snapshot.policy.dryRunCandidates,
    {
      id: "staged-bench",
      target: "tier:wide",
      limit: tokenBucket(BENCH_LIMITS.widePerSec, BENCH_LIMITS.widePerSec),
      sliceBasisPoints,
    },
  ];
  return { ...snapshot, policy: { ...snapshot.policy, dryRunCandidates: candidates } };
}

/** Resolutions a second over every customer once, on a freshly prepared snapshot. */
function resolvePass(snapshot: TSnapshot, customers: readonly string[]): number {
  const copy = structuredClone(snapshot);
  const prepared = prepareSnapshot(copy);
  const nowMs = Date.now();
  let checks = 0;
  const startedMs = performance.now();
  for (const customerId of customers) {
    checks += resolveLimits(prepared, { customerId, tier: "wide", path: "/v1/things" }, nowMs, {
      trace: false,
    }).checks.length;
  }
  const elapsedMs = performance.now() - startedMs;
  if (checks === 0) throw new Error("no checks resolved");
  return customers.length / (elapsedMs / 1000);
}

async function decideTrial(
  enforcer: Awaited<ReturnType<typeof createEnforcer>>,
  customers: readonly string[],
): Promise<{ perSec: number; rejected: number }> {
  let next = 0;
  let rejected = 0;
  const startedMs = performance.now();
  const worker = async () => {
    while (next < DECISIONS_PER_TRIAL) {
      const index = next++;
      const customerId = customers[index % customers.length] ?? "";
      const result = await enforcer.checkNow({
        customerId,
        tier: "wide",
        method: "GET",
        path: "/v1/things",
      });
      if (!result.decision.allowed) rejected += 1;
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return { perSec: DECISIONS_PER_TRIAL / ((performance.now() - startedMs) / 1000), rejected };
}

export async function run(): Promise<void> {
  console.log(loadLine("at the start"));
  const plain = benchSnapshot(1);
  const half = stagedSnapshot(5_000, 1);
  const resolveCustomers = Array.from({ length: RESOLVE_CUSTOMERS }, (_, i) => `res-${i}`);
  const plainResolve: number[] = [];
  const stagedResolve: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const order = run % 2 === 0 ? ["plain", "staged"] : ["staged", "plain"];
    for (const side of order) {
      if (side === "plain") plainResolve.push(resolvePass(plain, resolveCustomers));
      else stagedResolve.push(resolvePass(half, resolveCustomers));
    }
  }
  console.log(
    `resolution, 10,000 customers once each: plain ${summary(plainResolve, 0)}/s, staged 50 % ${summary(stagedResolve, 0)}/s`,
  );

  const redis = await benchRedis();
  console.log(describeRedis(redis));
  const client = new Redis(redis.url);
  const plainDecide: number[] = [];
  const stagedDecide: number[] = [];
  let rejected = 0;
  try {
    for (let run = 0; run < RUNS; run++) {
      const order = run % 2 === 0 ? ["plain", "staged"] : ["staged", "plain"];
      for (const side of order) {
        const prefix = `bench-staged-${randomBytes(3).toString("hex")}:`;
        await publishTestSnapshot(
          client,
          prefix,
          side === "plain" ? benchSnapshot(1) : stagedSnapshot(10_000, 1),
        );
        const enforcer = await createEnforcer({
          expectedGateways: 1,
          logger: silentLogger,
          redis: { url: redis.url, keyPrefix: prefix },
        });
        try {
          const customers = Array.from(
            { length: DECIDE_CUSTOMERS },
            (_, i) => `dec-${run}-${side}-${i}`,
          );
          // Unmeasured: the leases of the plain side are granted, both sides' keys exist.
          await decideTrial(enforcer, customers);
          const trial = await decideTrial(enforcer, customers);
          rejected += trial.rejected;
          (side === "plain" ? plainDecide : stagedDecide).push(trial.perSec);
        } finally {
          await enforcer.stop();
          await deleteKeysUnder(client, prefix);
        }
      }
    }
  } finally {
    client.disconnect();
    await redis.stop();
  }
  console.log(
    `decisions through the enforcer, 1,000 customers, ${IN_FLIGHT} in flight: plain ${summary(plainDecide, 0)}/s, staged 100 % ${summary(stagedDecide, 0)}/s`,
  );

  const targets = new Targets();
  targets.atMost(
    "resolution time with a staged change, over without",
    pairedRatios(plainResolve, stagedResolve),
    3,
  );
  targets.holds(
    "decisions a second with a staged change, over without (leases off)",
    `${summary(pairedRatios(stagedDecide, plainDecide))}x`,
    true,
    "information",
  );
  targets.holds(
    "requests rejected (the wide tier admits all)",
    String(rejected),
    rejected === 0,
    "0",
  );
  targets.print("Staged change on the hot path");
  console.log(loadLine("at the end"));
}
