import { appendFile } from "node:fs/promises";

/**
 * Appends one failover test's measurements to `FAILOVER_REPORT_FILE` as a JSON line, for
 * `npm run test:failover -- --repeat N` (scripts/test-failover.ts) to print their distribution.
 * Without the variable, nothing is written.
 */
export async function appendFailoverReport(report: Record<string, unknown>): Promise<void> {
  const file = process.env.FAILOVER_REPORT_FILE;
  if (file === undefined || file === "") return;
  await appendFile(file, `${JSON.stringify(report)}\n`);
}
