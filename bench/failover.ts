/**
 * Failover suite: repeated Sentinel failovers under load, and what `durability: "replicated"`
 * costs, measured in the same runs.
 *
 * Each run starts its own primary, two replicas and three sentinels (`SentinelGroup`, the one the
 * failover test uses; `down-after-milliseconds` 3000) and enforcers in this process, configured by
 * the sentinels as a gateway is, with the limits in code:
 *
 * 1. Cost (leases off, so every decision is a Redis call): trials of DECISIONS_PER_TRIAL
 *    decisions, IN_FLIGHT at once over 1,000 customers, alternating a tier of the default
 *    durability with the same tier declared `replicated` (each call followed by `WAIT 1`).
 *    Decisions a second and p99 latency, the ratio taken within the run.
 * 2. Failover (an enforcer with its defaults, leases on): a tight key (token bucket 10, 10/s,
 *    failing closed) and a replicated key of the same size hammered, quiet probe customers
 *    (failing closed: only Redis admits them) asked every 20 ms. `INFO replication` is read, the
 *    primary gets SIGKILL, and the suite measures the time to the sentinels' `+switch-master` and
 *    to the first probe Redis admits again; the traffic goes on 3 s more.
 *
 * Targets (the issue's aims, as docs/failover.md states them): Redis decides again within 4 s of
 * the promotion (the design figure: reconnect backoff cap plus breaker cool-down); the tight key's
 * admissions within `C + r × T` plus the documented overshoot bound `C + r × L`; the replicated key
 * never over `C + r × T`. The cost has no aim: the docs say when it is worth it.
 *
 * BENCH_FAILOVER_RUNS sets the number of failovers (default 3).
 */
import { randomBytes } from "node:crypto";
import { createEnforcer, type EnforcerLogger } from "@limitplane/enforcer";
import type { TPolicyDocumentInput } from "@limitplane/enforcer/policy";
import { examplePolicyInput, tokenBucket } from "@limitplane/enforcer/testing";
import { Redis } from "ioredis";
import { SentinelGroup } from "../test/integration/helpers/sentinel-group";
import { loadLine, median, pairedRatios, summary } from "./fair";
import { Targets } from "./results";

const RUNS = Number(process.env.BENCH_FAILOVER_RUNS ?? 3);
const DECISIONS_PER_TRIAL = 4_000;
const IN_FLIGHT = 16;
const COST_PAIRS = 3;
const TIGHT = { capacity: 10, refillPerSec: 10 } as const;
/** The design figure docs/failover.md states: 2 s reconnect backoff cap + 2 s breaker cool-down. */
const RETURN_AIM_MS = 4_000;
const silentLogger: EnforcerLogger = { log() {} };

function policy(): TPolicyDocumentInput {
  const input = examplePolicyInput();
  const wide = tokenBucket(1_000_000, 1_000_000);
  input.tiers.push(
    { name: "wide", limit: wide },
    { name: "wide-replicated", limit: { ...wide, durability: "replicated" } },
    {
      name: "tight",
      limit: { ...tokenBucket(TIGHT.capacity, TIGHT.refillPerSec), onStoreFailure: "closed" },
    },
    {
      name: "vault",
      limit: {
        ...tokenBucket(TIGHT.capacity, TIGHT.refillPerSec),
        onStoreFailure: "closed",
        durability: "replicated",
      },
    },
    { name: "probe", limit: { ...tokenBucket(1_000, 1_000), onStoreFailure: "closed" } },
  );
  return input;
}

type Enforcer = Awaited<ReturnType<typeof createEnforcer>>;

function enforcerOn(group: SentinelGroup, prefix: string, leases: boolean): Promise<Enforcer> {
  return createEnforcer({
    expectedGateways: 1,
    logger: silentLogger,
    policy: policy(),
    ...(leases ? {} : { leases: false as const }),
    redis: {
      url: "redis://sentinel-managed/0",
      sentinel: { nodes: group.sentinelNodes, name: group.masterName },
      keyPrefix: prefix,
    },
  });
}

function percentile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

/** One cost trial: decisions a second and p99 latency (ms) of `tier`, leases off. */
async function costTrial(
  enforcer: Enforcer,
  tier: string,
  run: number,
): Promise<{ perSec: number; p99Ms: number; failed: number }> {
  let next = 0;
  let failed = 0;
  const latencies: number[] = [];
  const startedMs = performance.now();
  const worker = async () => {
    while (next < DECISIONS_PER_TRIAL) {
      const index = next++;
      const sentMs = performance.now();
      const result = await enforcer.checkNow({
        customerId: `cost-${run}-${index % 1_000}`,
        tier,
        method: "GET",
        path: "/v1/things",
      });
      latencies.push(performance.now() - sentMs);
      if (result.decision.source !== "store") failed++;
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const elapsedSec = (performance.now() - startedMs) / 1_000;
  return { perSec: DECISIONS_PER_TRIAL / elapsedSec, p99Ms: percentile(latencies, 0.99), failed };
}

interface FailoverRun {
  readonly promotionMs: number;
  readonly returnMs: number;
  readonly returnAfterPromotionMs: number;
  readonly lagSec: number;
  readonly tightAdmitted: number;
  readonly allowance: number;
  readonly overshootBound: number;
  readonly vaultAdmitted: number;
}

async function failoverRun(group: SentinelGroup, enforcer: Enforcer): Promise<FailoverRun> {
  let isRunning = true;
  let tightAdmitted = 0;
  let vaultAdmitted = 0;
  const probes: { atMs: number; isStore: boolean }[] = [];
  const hammer = (tier: string, customerId: string, count: () => void) => async () => {
    while (isRunning) {
      const result = await enforcer.checkNow({ customerId, tier, method: "GET", path: "/x" });
      if (result.decision.allowed) count();
      // Yield to timers and I/O: a rejection answered in process would otherwise spin.
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  let probeCount = 0;
  const probe = async () => {
    while (isRunning) {
      const result = await enforcer.checkNow({
        customerId: `probe-${probeCount++}`,
        tier: "probe",
        method: "GET",
        path: "/x",
      });
      probes.push({
        atMs: performance.now(),
        isStore: result.decision.source === "store" && result.decision.allowed,
      });
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  const startedMs = performance.now();
  const loops = [
    ...Array.from(
      { length: 4 },
      hammer("tight", "hammer", () => tightAdmitted++),
    ),
    ...Array.from(
      { length: 2 },
      hammer("vault", "vault", () => vaultAdmitted++),
    ),
    probe(),
  ];
  await new Promise((resolve) => setTimeout(resolve, 2_000));

  const sentinelEvents = new Redis({ port: group.sentinelNodes[0]?.port, host: "127.0.0.1" });
  sentinelEvents.on("error", () => {});
  let switchedAtMs: number | null = null;
  sentinelEvents.on("message", (channel: string) => {
    if (channel === "+switch-master") switchedAtMs ??= performance.now();
  });
  await sentinelEvents.subscribe("+switch-master");
  const oldPrimary = await group.primaryPort();
  const infoAtMs = performance.now();
  const replication = await group.replication(oldPrimary);
  const killedAtMs = performance.now();
  await group.kill(oldPrimary);

  let backAtMs: number | null = null;
  const deadlineMs = killedAtMs + 60_000;
  while (backAtMs === null && performance.now() < deadlineMs) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    if (switchedAtMs !== null) {
      backAtMs =
        probes.find((entry) => entry.atMs > (switchedAtMs ?? 0) && entry.isStore)?.atMs ?? null;
    }
  }
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  isRunning = false;
  await Promise.all(loops);
  const endedMs = performance.now();
  sentinelEvents.disconnect();
  if (switchedAtMs === null || backAtMs === null) throw new Error("no failover within 60 s");

  const runSec = (endedMs - startedMs) / 1_000;
  const lagSec =
    Math.max(0, ...replication.replicas.map((replica) => replica.lagSec)) +
    1 +
    (killedAtMs - infoAtMs) / 1_000;
  return {
    promotionMs: switchedAtMs - killedAtMs,
    returnMs: backAtMs - killedAtMs,
    returnAfterPromotionMs: Math.max(0, backAtMs - switchedAtMs),
    lagSec,
    tightAdmitted,
    allowance: TIGHT.capacity + TIGHT.refillPerSec * runSec,
    overshootBound: TIGHT.capacity + TIGHT.refillPerSec * lagSec,
    vaultAdmitted,
  };
}

export async function run(): Promise<void> {
  console.log(loadLine("at the start"));
  const plainPerSec: number[] = [];
  const replicatedPerSec: number[] = [];
  const plainP99: number[] = [];
  const replicatedP99: number[] = [];
  let costFailures = 0;
  const failovers: FailoverRun[] = [];
  for (let run = 0; run < RUNS; run++) {
    const group = await SentinelGroup.start({ downAfterMs: 3_000 });
    const prefix = `bench-failover-${randomBytes(3).toString("hex")}:`;
    try {
      const costEnforcer = await enforcerOn(group, prefix, false);
      try {
        await costTrial(costEnforcer, "wide", run); // warm-up
        for (let pair = 0; pair < COST_PAIRS; pair++) {
          const order = pair % 2 === 0 ? ["wide", "wide-replicated"] : ["wide-replicated", "wide"];
          for (const tier of order) {
            const trial = await costTrial(costEnforcer, tier, run);
            costFailures += trial.failed;
            if (tier === "wide") {
              plainPerSec.push(trial.perSec);
              plainP99.push(trial.p99Ms);
            } else {
              replicatedPerSec.push(trial.perSec);
              replicatedP99.push(trial.p99Ms);
            }
          }
        }
      } finally {
        await costEnforcer.stop();
      }
      const enforcer = await enforcerOn(group, prefix, true);
      try {
        const measured = await failoverRun(group, enforcer);
        failovers.push(measured);
        console.log(
          `failover ${run + 1}/${RUNS}: promotion ${Math.round(measured.promotionMs)} ms, first Redis decision ${Math.round(measured.returnMs)} ms after the kill (${Math.round(measured.returnAfterPromotionMs)} ms after the promotion), lag ${measured.lagSec.toFixed(2)} s; tight key ${measured.tightAdmitted} admitted, allowance ${measured.allowance.toFixed(1)} + bound ${measured.overshootBound.toFixed(1)}; replicated key ${measured.vaultAdmitted} admitted`,
        );
      } finally {
        await enforcer.stop();
      }
    } finally {
      await group.stop();
    }
  }

  console.log(
    `\ncost of durability "replicated", leases off, ${IN_FLIGHT} in flight, ${DECISIONS_PER_TRIAL} decisions a trial, ${COST_PAIRS} pairs a run:`,
  );
  console.log(
    `  decisions a second: default ${summary(plainPerSec, 0)}, replicated ${summary(replicatedPerSec, 0)}`,
  );
  console.log(
    `  p99 latency (ms):   default ${summary(plainP99, 2)}, replicated ${summary(replicatedP99, 2)}`,
  );
  const targets = new Targets();
  targets.holds(
    "kill -9 to promotion (+switch-master)",
    `${summary(
      failovers.map((run) => run.promotionMs),
      0,
    )} ms`,
    true,
    "information",
  );
  targets.holds(
    "kill -9 to the first Redis decision",
    `${summary(
      failovers.map((run) => run.returnMs),
      0,
    )} ms`,
    true,
    "information",
  );
  targets.atMost(
    "promotion to the first Redis decision (ms)",
    failovers.map((run) => run.returnAfterPromotionMs),
    RETURN_AIM_MS,
    " ms",
  );
  const overshoots = failovers.map((run) => run.tightAdmitted - run.allowance);
  const worstMargin = Math.max(
    ...failovers.map((run) => run.tightAdmitted - run.allowance - run.overshootBound),
  );
  targets.holds(
    "tight key: admitted - allowance, against the documented bound",
    `${summary(overshoots, 1)} (bound ${summary(
      failovers.map((run) => run.overshootBound),
      1,
    )})`,
    worstMargin <= 0,
    "<= bound in every run",
  );
  const vaultOver = Math.max(...failovers.map((run) => run.vaultAdmitted - run.allowance));
  targets.holds(
    "replicated key: admitted - allowance (never over)",
    `${summary(
      failovers.map((run) => run.vaultAdmitted - run.allowance),
      1,
    )}`,
    vaultOver <= 0,
    "<= 0 in every run",
  );
  targets.holds(
    "decisions a second, replicated over default",
    `${summary(pairedRatios(replicatedPerSec, plainPerSec))}x`,
    true,
    "information",
  );
  targets.holds(
    "p99 latency, replicated over default",
    `${summary(pairedRatios(replicatedP99, plainP99))}x`,
    true,
    "information",
  );
  targets.holds("cost trials decided without Redis", String(costFailures), costFailures === 0, "0");
  targets.print(
    `Failover, ${RUNS} runs (median ${median(failovers.map((run) => run.returnMs)).toFixed(0)} ms kill to Redis)`,
  );
  console.log(loadLine("at the end"));
}
