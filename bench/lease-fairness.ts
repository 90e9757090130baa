/**
 * Lease fairness: what three gateway processes admit of one customer's traffic with leases on
 * and off, over a grid of limits, splits of the traffic between the gateways (even, 70/20/10,
 * 90/5/5) and offered rates (0.5x to 3x the limit's sustained rate), against what the limit
 * allows (`FairnessGateways` in `@limitplane/enforcer/testing`: a token bucket's capacity plus
 * its refill over the span Redis measured, capped at what was offered; a window's replay of the
 * requests through the pure core). Each cell runs with leases on and off, alternating which goes
 * first. Prints every cell, then the worst ratio with leases (aim: at least 0.98), the rounds
 * that admitted more than a token bucket allows (aim: none) and the requests rejected under the
 * limit (aim: none), and the share of admissions leases answered.
 */

import type { LimitSpec } from "@limitplane/enforcer/limiter";
import { FairnessGateways, type FairnessOutcome } from "@limitplane/enforcer/testing";
import { benchRedis, describeRedis, loadLine } from "./fair";
import { Targets } from "./results";

const SPLITS: readonly { readonly name: string; readonly shares: readonly number[] }[] = [
  { name: "even", shares: [1 / 3, 1 / 3, 1 / 3] },
  { name: "70/20/10", shares: [0.7, 0.2, 0.1] },
  { name: "90/5/5", shares: [0.9, 0.05, 0.05] },
];
const RATES = [0.5, 1, 1.5, 3];
const LIMITS: readonly { readonly name: string; readonly limit: LimitSpec }[] = [
  {
    name: "token bucket 100 + 50/s",
    limit: { algorithm: "token-bucket", capacity: 100, refillPerSec: 50 },
  },
  {
    name: "fixed window 300 / 3 s",
    limit: { algorithm: "fixed-window", limit: 300, windowMs: 3_000 },
  },
  {
    name: "sliding window 300 / 3 s",
    limit: { algorithm: "sliding-window", limit: 300, windowMs: 3_000 },
  },
];
/** Shorter than the windows above, so a window's round runs in one window (see the runner). */
const ROUND_MS = Number(process.env.BENCH_FAIRNESS_ROUND_MS ?? 2_700);

interface Cell {
  readonly limit: string;
  readonly split: string;
  readonly rate: number;
  readonly leased: FairnessOutcome;
  readonly plain: FairnessOutcome;
}

const ratioOf = (outcome: FairnessOutcome) =>
  outcome.ideal === 0 ? 1 : outcome.admitted / outcome.ideal;

export async function run(): Promise<void> {
  const redis = await benchRedis();
  console.log(`Redis: ${describeRedis(redis)}`);
  console.log(loadLine("at start"));
  const gateways = await FairnessGateways.start(3, redis.url, `bench-fair-${Date.now()}:`);
  const cells: Cell[] = [];
  try {
    let leasesFirst = true;
    for (const { name, limit } of LIMITS) {
      for (const split of SPLITS) {
        for (const rate of RATES) {
          const round = { limit, split: split.shares, rateMultiple: rate, durationMs: ROUND_MS };
          const first = await gateways.run({ ...round, leases: leasesFirst });
          const second = await gateways.run({ ...round, leases: !leasesFirst });
          const [leased, plain] = leasesFirst ? [first, second] : [second, first];
          leasesFirst = !leasesFirst;
          cells.push({ limit: name, split: split.name, rate, leased, plain });
          console.log(
            `${name.padEnd(25)} ${split.name.padEnd(9)} ${rate.toFixed(1)}x  offered ${String(leased.offered).padStart(5)}  leases ${String(leased.admitted).padStart(5)} / ideal ${String(leased.ideal).padStart(5)} = ${ratioOf(leased).toFixed(3)}  without ${String(plain.admitted).padStart(5)} / ${String(plain.ideal).padStart(5)} = ${ratioOf(plain).toFixed(3)}  answered by leases ${((100 * leased.fromLeases) / Math.max(1, leased.admitted)).toFixed(0)} %  returned ${leased.returnedUnits}, expired ${leased.expiredUnits}`,
          );
        }
      }
    }
  } finally {
    await gateways.stop();
    await redis.stop();
  }
  console.log(loadLine("at end"));

  const worst = cells.reduce((low, cell) =>
    ratioOf(cell.leased) < ratioOf(low.leased) ? cell : low,
  );
  const worstPlain = Math.min(...cells.map((cell) => ratioOf(cell.plain)));
  const over = cells.filter(
    (cell) =>
      cell.leased.ideal < cell.leased.offered &&
      cell.limit.startsWith("token") &&
      cell.leased.admitted > cell.leased.allowed,
  );
  const underRejected = cells
    .filter((cell) => cell.rate < 1)
    .reduce((total, cell) => total + (cell.leased.offered - cell.leased.admitted), 0);
  const leased = cells.reduce((total, cell) => total + cell.leased.fromLeases, 0);
  const admitted = cells.reduce((total, cell) => total + cell.leased.admitted, 0);

  const targets = new Targets();
  targets.holds(
    "worst ratio with leases over the grid",
    `${ratioOf(worst.leased).toFixed(3)} (${worst.limit}, ${worst.split}, ${worst.rate}x; without leases the worst was ${worstPlain.toFixed(3)})`,
    ratioOf(worst.leased) >= 0.98,
    ">= 0.98 of the ideal",
  );
  targets.holds(
    "rounds admitting more than a token bucket allows",
    `${over.length} of ${cells.filter((cell) => cell.limit.startsWith("token")).length}`,
    over.length === 0,
    "none",
  );
  targets.holds(
    "requests rejected under the limit (0.5x), with leases",
    String(underRejected),
    underRejected === 0,
    "none",
  );
  targets.print("lease fairness targets");
  console.log(
    `admissions answered by leases over the grid: ${((100 * leased) / Math.max(1, admitted)).toFixed(1)} %`,
  );
}
