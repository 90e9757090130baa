/**
 * The overshoot and under-admission of a global budget against docs/regions.md's bounds, for 3
 * regions and a skewed, shifting load: runs test/integration/global-budgets.test.ts (real
 * processes: a redis-server and a demo gateway per region, the real worker, us-west cut off from
 * it for 2 s) and prints what it measured. The test asserts the same figures; here they are
 * printed with the load average, as targets.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { loadLine } from "./fair";
import type { Targets } from "./results";

const ROOT = path.resolve(import.meta.dirname, "..");
const TEST_FILE = "test/integration/global-budgets.test.ts";

/** What the test writes to GLOBAL_BUDGET_REPORT. */
interface GlobalBudgetReport {
  readonly spanSec: number;
  readonly admitted: number;
  readonly allowance: number;
  readonly overshoot: { readonly worst: number; readonly atMs: number; readonly bound: number };
  readonly underAdmission: {
    readonly measured: number;
    /** With I stretched to the pace the rounds kept. */
    readonly bound: number;
    readonly boundAtSettings: number;
    readonly shareOfAllowance: number;
  };
  readonly sharesMoved: {
    readonly total: number;
    readonly whileFirstFill: number;
    readonly demandMoved: number;
  };
  readonly longestRoundGapMs: number;
  readonly sharesAfterShift: readonly number[];
  readonly allotted: readonly number[];
}

export async function measureGlobalBudgetBounds(targets: Targets): Promise<void> {
  const reportFile = path.join(tmpdir(), `lp-global-budget-${process.pid}.json`);
  console.log(`global budgets: running ${TEST_FILE} (about 100 s)`);
  console.log(loadLine("before the global budget run"));
  const child = spawn("npx", ["vitest", "run", "--project", "integration", TEST_FILE], {
    cwd: ROOT,
    env: { ...process.env, GLOBAL_BUDGET_REPORT: reportFile },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  for (const stream of [child.stdout, child.stderr]) {
    stream?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
  }
  const [code] = (await once(child, "exit")) as [number | null];
  console.log(loadLine("after the global budget run"));
  let report: GlobalBudgetReport;
  try {
    report = JSON.parse(await readFile(reportFile, "utf8")) as GlobalBudgetReport;
  } catch {
    console.log(output.slice(-4_000));
    throw new Error(`${TEST_FILE} exited with ${code} and wrote no report`);
  } finally {
    await rm(reportFile, { force: true });
  }
  if (code !== 0) console.log(output.slice(-4_000));
  const percent = (units: number) => `${((100 * units) / report.allowance).toFixed(1)} %`;
  console.log(
    `global budgets: ${report.admitted} admitted of ${report.allowance.toFixed(0)} allowed over ` +
      `${report.spanSec.toFixed(1)} s; shares moved ${report.sharesMoved.total.toFixed(2)} ` +
      `(${report.sharesMoved.demandMoved.toFixed(2)} by the demand's shifts, ` +
      `${report.sharesMoved.whileFirstFill.toFixed(2)} while the first fill lasted); ` +
      `rounds' longest gap ${report.longestRoundGapMs.toFixed(0)} ms`,
  );
  console.log(
    `global budgets: admitted shares after the shift ${report.sharesAfterShift
      .map((share) => share.toFixed(3))
      .join(" / ")}, allotted ${report.allotted.map((share) => share.toFixed(3)).join(" / ")}`,
  );
  const over = report.overshoot.worst;
  targets.holds(
    "global budget overshoot (worst admitted - (C + r.t) at any answer)",
    `${over.toFixed(0)} at ${(report.overshoot.atMs / 1000).toFixed(1)} s (bound ${report.overshoot.bound})`,
    over <= report.overshoot.bound,
    "<= the bound (0)",
  );
  const under = report.underAdmission;
  targets.holds(
    "global budget under-admission against the formula",
    `${under.measured.toFixed(0)} = ${percent(under.measured)} (bound ${under.bound.toFixed(0)} at the rounds' pace)`,
    under.measured <= under.bound,
    "<= the bound",
  );
  targets.holds(
    "global budget under-admission bound at the tested settings",
    `${under.boundAtSettings.toFixed(0)} = ${percent(under.boundAtSettings)}`,
    under.shareOfAllowance <= 0.05,
    "<= 5 % of the allowance",
  );
  targets.holds(
    "global budget test's assertions (shares follow demand, demand counted exactly)",
    code === 0 ? "passed" : `failed (exit ${code})`,
    code === 0,
    "passed",
  );
}
