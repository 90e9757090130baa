/**
 * Runs the Sentinel failover test (`test/integration/sentinel-failover.test.ts`) several times in
 * a row and prints the distribution of what each run measured:
 *
 *   npm run test:failover                 # once
 *   npm run test:failover -- --repeat 20  # twenty runs; exits 1 unless every one passed
 *
 * Each run is a fresh vitest process with its own primary, replicas, sentinels and gateways; the
 * test appends its measurements to FAILOVER_REPORT_FILE as one JSON line. Needs what the
 * integration tests need (Postgres and Redis on this machine) and `redis-server` on the PATH.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { z } from "zod";

const ZRunReport = z.object({
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
type RunReport = z.infer<typeof ZRunReport>;

const { values } = parseArgs({ options: { repeat: { type: "string", default: "1" } } });
const repeat = Number(values.repeat);
if (!Number.isInteger(repeat) || repeat < 1 || repeat > 1000) {
  console.error(
    `--repeat must be a whole number from 1 to 1000, got ${JSON.stringify(values.repeat)}`,
  );
  process.exit(2);
}

const directory = mkdtempSync(path.join(tmpdir(), "lp-failover-"));
const reportFile = path.join(directory, "runs.jsonl");
let failures = 0;
for (let run = 1; run <= repeat; run++) {
  const result = spawnSync(
    "npx",
    ["vitest", "run", "--project", "integration", "test/integration/sentinel-failover.test.ts"],
    {
      stdio: ["ignore", "inherit", "inherit"],
      env: { ...process.env, FAILOVER_REPORT_FILE: reportFile },
    },
  );
  if (result.status !== 0) failures++;
  console.log(`run ${run}/${repeat}: ${result.status === 0 ? "PASS" : "FAIL"}`);
}

let runs: RunReport[] = [];
try {
  runs = readFileSync(reportFile, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => ZRunReport.parse(JSON.parse(line)));
} catch {
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

const [load1] = loadavg();
console.log(
  [
    "",
    `Sentinel failover, ${repeat} run(s), ${repeat - failures} passed, load average ${load1?.toFixed(2)}`,
    `  kill -9 to promotion (ms):           ${distribution(runs.map((run) => run.promotionMs))}`,
    `  kill -9 to Redis decisions (ms):     ${distribution(runs.flatMap((run) => run.gapMs))}`,
    `  promotion to Redis decisions (ms):   ${distribution(runs.flatMap((run) => run.returnAfterSwitchMs))}`,
    `  INFO replication lag (s):            ${distribution(runs.flatMap((run) => run.replicationLagSec))}`,
    `  tight key admitted - allowance:      ${distribution(runs.map((run) => run.overshoot))}`,
    `  documented overshoot bound:          ${distribution(runs.map((run) => run.overshootBound))}`,
    `  replicated key admitted - allowance: ${distribution(runs.flatMap((run) => (run.replicatedOvershoot === undefined ? [] : [run.replicatedOvershoot])))}`,
  ].join("\n"),
);
process.exit(failures === 0 ? 0 : 1);
