/**
 * The bench's results files: every target a suite prints is the row its file holds, with the
 * verdict it printed, and a suite that throws still leaves a file saying so.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  recordTarget,
  renderSuiteResults,
  runAndRecord,
  type SuiteResults,
  Targets,
  takeRecordedTargets,
} from "./results";

const scratch: string[] = [];

function scratchDirectory(): string {
  const directory = mkdtempSync(path.join(tmpdir(), "lp-bench-results-"));
  scratch.push(directory);
  return directory;
}

afterEach(() => {
  vi.restoreAllMocks();
  takeRecordedTargets();
  for (const directory of scratch.splice(0)) rmSync(directory, { recursive: true, force: true });
});

describe("Targets", () => {
  it("prints each target with its verdict and records the same row under the printed title", () => {
    const printed: string[] = [];
    vi.spyOn(console, "log").mockImplementation((line: string) => printed.push(line));
    const targets = new Targets();
    targets.atLeast("throughput ratio", [1.4, 1.6, 1.7], 1.5);
    targets.atMost("p99 ratio", [1.2, 1.1, 1.3], 1);
    targets.holds("exactness", "10", true, "<= 10");
    targets.print("demo targets");

    expect(printed.filter((line) => line.includes("TARGET"))).toEqual([
      "  TARGET throughput ratio  1.60 [1.40-1.70]x  aim >= 1.5x  PASS",
      "  TARGET p99 ratio         1.20 [1.10-1.30]x  aim <= 1x    SHORT",
      "  TARGET exactness         10                 aim <= 10    PASS",
    ]);
    expect(takeRecordedTargets()).toEqual([
      {
        group: "demo targets",
        name: "throughput ratio",
        measured: "1.60 [1.40-1.70]x",
        aim: ">= 1.5x",
        isMet: true,
      },
      {
        group: "demo targets",
        name: "p99 ratio",
        measured: "1.20 [1.10-1.30]x",
        aim: "<= 1x",
        isMet: false,
      },
      { group: "demo targets", name: "exactness", measured: "10", aim: "<= 10", isMet: true },
    ]);
  });

  it("taking the recorded targets starts a new collection", () => {
    recordTarget({ group: "g", name: "a", measured: "1", aim: "1", isMet: true });
    expect(takeRecordedTargets()).toHaveLength(1);
    expect(takeRecordedTargets()).toEqual([]);
  });
});

const RESULTS: SuiteResults = {
  suite: "demo",
  startedAt: new Date("2026-12-04T10:00:00.000Z"),
  durationMs: 125_000,
  commit: "0123456789ab",
  machine: {
    cpuModel: "Some CPU @ 2.00GHz",
    cores: 2,
    memoryGiB: 7.75,
    node: "v20.19.0",
    platform: "linux x64",
  },
  loadAtStart: [1.5, 1, 0.5],
  loadAtEnd: [2.25, 1.25, 0.75],
  targets: [
    { group: "demo targets", name: "a | b", measured: "1.60x", aim: ">= 1.5x", isMet: true },
    { group: "demo targets", name: "c", measured: "0.90x", aim: ">= 1x", isMet: false },
  ],
  output: "line one\nline two\n",
  failure: null,
};

describe("renderSuiteResults", () => {
  it("states the date, machine, Node, load at start and end, and every target's verdict", () => {
    const text = renderSuiteResults(RESULTS);
    expect(text).toContain("# Bench results: demo");
    expect(text).toContain("| Started | 2026-12-04T10:00:00.000Z (took 2 min 5 s) |");
    expect(text).toContain("| Machine | Some CPU @ 2.00GHz; 2 cores; 7.8 GiB; linux x64 |");
    expect(text).toContain("| Node | v20.19.0 |");
    expect(text).toContain(
      "| Load average at start | 1.50 / 1.00 / 0.50 (1 / 5 / 15 min); 0.75 per core |",
    );
    expect(text).toContain(
      "| Load average at end | 2.25 / 1.25 / 0.75 (1 / 5 / 15 min); 1.13 per core |",
    );
    expect(text).toContain("2 targets: 1 PASS, 1 SHORT.");
    expect(text).toContain("| demo targets | a \\| b | 1.60x | >= 1.5x | PASS |");
    expect(text).toContain("| demo targets | c | 0.90x | >= 1x | SHORT |");
    expect(text).toContain("```text\nline one\nline two\n```");
  });

  it("says when a suite has no targets, and when it failed", () => {
    const text = renderSuiteResults({ ...RESULTS, targets: [], failure: "redis-server not found" });
    expect(text).toContain("This suite has no targets");
    expect(text).toContain("| Outcome | failed: redis-server not found |");
  });
});

describe("runAndRecord", () => {
  it("writes <suite>.md with what the suite printed and the targets it recorded", async () => {
    const directory = scratchDirectory();
    vi.spyOn(console, "log").mockImplementation(() => {});
    vi.spyOn(process.stdout, "write").mockImplementation(() => true);
    const file = await runAndRecord(
      "demo",
      async () => {
        process.stdout.write("figures the suite printed\n");
        const targets = new Targets();
        targets.holds("exactness", "10", true, "<= 10");
        targets.print("demo targets");
      },
      directory,
    );
    expect(file).toBe(path.join(directory, "demo.md"));
    const text = readFileSync(file, "utf8");
    expect(text).toContain("figures the suite printed");
    expect(text).toContain("| demo targets | exactness | 10 | <= 10 | PASS |");
    expect(text).toContain("| Outcome | finished |");
  });

  it("still writes the file when the suite throws, and throws on", async () => {
    const directory = scratchDirectory();
    vi.spyOn(console, "log").mockImplementation(() => {});
    await expect(
      runAndRecord(
        "broken",
        async () => {
          throw new Error("no redis-server");
        },
        directory,
      ),
    ).rejects.toThrow("no redis-server");
    expect(readFileSync(path.join(directory, "broken.md"), "utf8")).toContain(
      "| Outcome | failed: no redis-server |",
    );
  });
});
