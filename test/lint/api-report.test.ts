/**
 * The API report check of `npm run lint` (packages/enforcer/scripts/api-report.ts) catches what
 * it promises: a checked-in report that no longer matches the source fails the step, naming the
 * entry point and the line, and a report for an entry point that does not exist is refused.
 */
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");
const REPORTS = path.join(ROOT, "packages/enforcer/api");

let scratch: string;
let result: ReturnType<typeof spawnSync>;

beforeAll(() => {
  scratch = mkdtempSync(path.join(tmpdir(), "lp-api-report-"));
  cpSync(REPORTS, scratch, { recursive: true });
  // A root export that the source no longer has, as a stale report would show it.
  const index = path.join(scratch, "index.api.md");
  writeFileSync(
    index,
    readFileSync(index, "utf8").replace(
      "## Exported\n\n```ts\n",
      "## Exported\n\n```ts\ndeclare function removedLongAgo(): void;\n\n",
    ),
  );
  writeFileSync(path.join(scratch, "internals.api.md"), "# API report: nothing\n");
  result = spawnSync(
    path.join(ROOT, "node_modules/.bin/tsx"),
    ["packages/enforcer/scripts/api-report.ts", "--check", "--reports", scratch],
    { cwd: ROOT, encoding: "utf8" },
  );
  // The compiler emits the package's declarations: seconds quiet, far more on a busy machine.
}, 180_000);

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
});

describe("the API report check in npm run lint", () => {
  it("fails the lint step when a report differs from the source", () => {
    expect(result.status).toBe(1);
  });

  it("names the report that differs, with the line, and only that one", () => {
    expect(result.stderr).toContain("api/index.api.md differs from the source:");
    expect(result.stderr).toContain("- declare function removedLongAgo(): void;");
    expect(result.stderr).not.toMatch(
      /api\/(callers|limiter|policy|publication|recording|testing)\.api/,
    );
  });

  it("refuses a report of an entry point the package does not export", () => {
    expect(result.stderr).toContain("api/internals.api.md reports no entry point");
  });
});
