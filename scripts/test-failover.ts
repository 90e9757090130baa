/**
 * Runs the failover tests several times in a row and prints the distribution of what each run
 * measured:
 *
 *   npm run test:failover                 # each test once
 *   npm run test:failover -- --repeat 20  # twenty rounds; exits 1 unless every run passed
 *   npm run test:failover -- --repeat 5 --only cluster
 *
 * The tests: `sentinel` (test/integration/sentinel-failover.test.ts: gateways on Sentinel, the
 * primary killed), `cluster` (the enforcer package's redis-cluster-failover.test.ts: a Cluster
 * master killed, the other masters' keys undisturbed) and `cluster-replicated`
 * (redis-cluster-replicated-failover.test.ts: `durability: "replicated"` through a master
 * failover that loses writes). Each run is a fresh vitest process that starts its own servers;
 * the test appends its measurements to FAILOVER_REPORT_FILE as one JSON line. Needs what the
 * integration tests need (Postgres and Redis on this machine) and `redis-server` on the PATH.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { z } from "zod";

const ZSentinelReport = z.object({
  kind: z.literal("sentinel"),
  gapMs: z.array(z.number()),
  promotionMs: z.number(),
  returnAfterSwitchMs: z.array(z.number()),
  replicationLagSec: z.array(z.number()),
  tightAdmitted: z.number(),
  tightAllowance: z.number(),
  overshoot: z.number(),
  overshootBound: z.number(),
  replicatedOvershoot: z.number().optional(),
});
const ZClusterReport = z.object({
  kind: z.literal("cluster"),
  killToDecisionsMs: z.number(),
  failedOnLostSlots: z.number(),
  degradedOnLostSlots: z.number(),
  degradedElsewhere: z.number(),
});
const ZClusterReplicatedReport = z.object({
  kind: z.literal("cluster-replicated"),
  capacity: z.number(),
  replicatedOvershoot: z.number(),
  defaultOvershoot: z.number(),
  replicatedUnavailable: z.number(),
});
const ZRunReport = z.discriminatedUnion("kind", [
  ZSentinelReport,
  ZClusterReport,
  ZClusterReplicatedReport,
]);
type RunReport = z.infer<typeof ZRunReport>;

const TESTS = {
  sentinel: {
    cwd: ".",
    args: [
      "vitest",
      "run",
      "--project",
      "integration",
      "test/integration/sentinel-failover.test.ts",
    ],
  },
  cluster: {
    cwd: "packages/enforcer",
    args: ["vitest", "run", "--project", "enforcer-redis", "test/redis-cluster-failover.test.ts"],
  },
  "cluster-replicated": {
    cwd: "packages/enforcer",
    args: [
      "vitest",
      "run",
      "--project",
      "enforcer-redis",
      "test/redis-cluster-replicated-failover.test.ts",
    ],
  },
} as const;
type TestName = keyof typeof TESTS;
const TEST_NAMES = Object.keys(TESTS) as TestName[];

const { values } = parseArgs({
  options: { repeat: { type: "string", default: "1" }, only: { type: "string" } },
});
const repeat = Number(values.repeat);
if (!Number.isInteger(repeat) || repeat < 1 || repeat > 1000) {
  console.error(
    `--repeat must be a whole number from 1 to 1000, got ${JSON.stringify(values.repeat)}`,
  );
  process.exit(2);
}
const only = values.only;
if (only !== undefined && !TEST_NAMES.includes(only as TestName)) {
  console.error(`--only must be one of ${TEST_NAMES.join(", ")}, got ${JSON.stringify(only)}`);
  process.exit(2);
}
const chosen: readonly TestName[] = only === undefined ? TEST_NAMES : [only as TestName];

const root = path.resolve(import.meta.dirname, "..");
const directory = mkdtempSync(path.join(tmpdir(), "lp-failover-"));
const reportFile = path.join(directory, "runs.jsonl");
const failures = new Map<TestName, number>(chosen.map((name) => [name, 0]));
for (let round = 1; round <= repeat; round++) {
  for (const name of chosen) {
    const test = TESTS[name];
    const result = spawnSync("npx", [...test.args], {
      cwd: path.join(root, test.cwd),
      stdio: ["ignore", "inherit", "inherit"],
      env: { ...process.env, FAILOVER_REPORT_FILE: reportFile },
    });
    if (result.status !== 0) failures.set(name, (failures.get(name) ?? 0) + 1);
    console.log(`round ${round}/${repeat}, ${name}: ${result.status === 0 ? "PASS" : "FAIL"}`);
  }
}

let runs: RunReport[] = [];
try {
  runs = readFileSync(reportFile, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => ZRunReport.parse(JSON.parse(line)));
} catch (error: unknown) {
  console.error(`the runs' reports could not be read: ${String(error)}`);
  runs = [];
}
rmSync(directory, { recursive: true, force: true });

/** min / median / p90 / max of `values`, rounded. */
function distribution(values: readonly number[]): string {
  if (values.length === 0) return "no data";
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  const shown = (value: number) => String(Math.round(value * 10) / 10);
  return `min ${shown(sorted[0] ?? 0)}  median ${shown(at(0.5))}  p90 ${shown(at(0.9))}  max ${shown(sorted.at(-1) ?? 0)}`;
}

const of = <K extends RunReport["kind"]>(kind: K) =>
  runs.filter((run): run is Extract<RunReport, { kind: K }> => run.kind === kind);
const passed = (name: TestName) => `${repeat - (failures.get(name) ?? 0)} of ${repeat} passed`;
const [load1] = loadavg();
const lines = [
  "",
  `${repeat} round(s), load average ${load1?.toFixed(2)} at the end (figures of passing and failing runs alike)`,
];
if (chosen.includes("sentinel")) {
  const sentinel = of("sentinel");
  lines.push(
    `Sentinel failover: ${passed("sentinel")}`,
    `  kill -9 to promotion (ms):           ${distribution(sentinel.map((run) => run.promotionMs))}`,
    `  kill -9 to Redis decisions (ms):     ${distribution(sentinel.flatMap((run) => run.gapMs))}`,
    `  promotion to Redis decisions (ms):   ${distribution(sentinel.flatMap((run) => run.returnAfterSwitchMs))}`,
    `  INFO replication lag (s):            ${distribution(sentinel.flatMap((run) => run.replicationLagSec))}`,
    `  tight key admitted - allowance:      ${distribution(sentinel.map((run) => run.overshoot))}`,
    `  documented overshoot bound:          ${distribution(sentinel.map((run) => run.overshootBound))}`,
    `  replicated key admitted - allowance: ${distribution(sentinel.flatMap((run) => (run.replicatedOvershoot === undefined ? [] : [run.replicatedOvershoot])))}`,
  );
}
if (chosen.includes("cluster")) {
  const cluster = of("cluster");
  lines.push(
    `Cluster master failover: ${passed("cluster")}`,
    `  kill -9 to the lost slots decided (ms): ${distribution(cluster.map((run) => run.killToDecisionsMs))}`,
    `  failed decisions on the lost slots:     ${distribution(cluster.map((run) => run.failedOnLostSlots))}`,
    `  degraded decisions elsewhere:           ${distribution(cluster.map((run) => run.degradedElsewhere))}`,
  );
}
if (chosen.includes("cluster-replicated")) {
  const replicated = of("cluster-replicated");
  lines.push(
    `Cluster failover losing writes, durability "replicated": ${passed("cluster-replicated")}`,
    `  replicated limit admitted - capacity: ${distribution(replicated.map((run) => run.replicatedOvershoot))}`,
    `  default limit admitted - capacity:    ${distribution(replicated.map((run) => run.defaultOvershoot))}`,
  );
}
console.log(lines.join("\n"));
const failed = [...failures.values()].reduce((sum, count) => sum + count, 0);
process.exit(failed === 0 ? 0 : 1);
