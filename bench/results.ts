/**
 * What a bench run found, kept as a file. Every target a suite checks goes through this module:
 * it prints the line people read and collects the same row, and the runner writes the rows of
 * each suite to `bench/results/<suite>.md` with the date, the machine, Node's version, the load
 * average at the start and at the end, and everything the suite printed. So the screen and the
 * file cannot disagree, and no figure is copied into prose by hand.
 *
 * The method behind the figures is in bench/README.md.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg, totalmem } from "node:os";
import path from "node:path";
import { median, summary } from "./fair";

export type Verdict = "PASS" | "SHORT";

/** One target as a suite measured it: the figures, the aim, and whether the aim was met. */
export interface TargetResult {
  /** The heading the suite prints the target under ("core targets"). */
  readonly group: string;
  readonly name: string;
  /** The figures behind the verdict, as printed (`1.52 [1.17-1.56]x`). */
  readonly measured: string;
  /** The aim, as printed (`>= 1.5x`). */
  readonly aim: string;
  readonly isMet: boolean;
}

export function verdictOf(isMet: boolean): Verdict {
  return isMet ? "PASS" : "SHORT";
}

/** The rows recorded since the runner last took them (one suite's). */
let recorded: TargetResult[] = [];

/** Records a target for the results file and returns the line to print for it. */
export function recordTarget(target: TargetResult): string {
  recorded.push(target);
  return `${target.name}: ${target.measured}   aim ${target.aim}   ${verdictOf(target.isMet)}`;
}

/** The targets recorded since the last call, which starts a new collection. */
export function takeRecordedTargets(): TargetResult[] {
  const taken = recorded;
  recorded = [];
  return taken;
}

/** A suite's targets, printed together at its end as an aligned table, and recorded. */
export class Targets {
  readonly #rows: Omit<TargetResult, "group">[] = [];

  /** The median of `values` must be at least `aim` (a ratio, printed as `<value>x`). */
  atLeast(name: string, values: readonly number[], aim: number): void {
    this.#rows.push({
      name,
      measured: `${summary(values)}x`,
      aim: `>= ${aim}x`,
      isMet: median(values) >= aim,
    });
  }

  /** The median of `values` must be at most `aim`. */
  atMost(name: string, values: readonly number[], aim: number, unit = "x"): void {
    this.#rows.push({
      name,
      measured: `${summary(values)}${unit}`,
      aim: `<= ${aim}${unit}`,
      isMet: median(values) <= aim,
    });
  }

  /** A target whose figure the suite formats itself (exactness, a count, a byte size). */
  holds(name: string, measured: string, isMet: boolean, aim: string): void {
    this.#rows.push({ name, measured, aim, isMet });
  }

  print(title: string): void {
    console.log(`\n${title} (median [min-max] over the runs; every ratio from the same run)`);
    const widths = [0, 0, 0];
    for (const row of this.#rows) {
      widths[0] = Math.max(widths[0] ?? 0, row.name.length);
      widths[1] = Math.max(widths[1] ?? 0, row.measured.length);
      widths[2] = Math.max(widths[2] ?? 0, row.aim.length);
    }
    for (const row of this.#rows) {
      recordTarget({ group: title, ...row });
      console.log(
        `  TARGET ${row.name.padEnd(widths[0] ?? 0)}  ${row.measured.padEnd(widths[1] ?? 0)}  aim ${row.aim.padEnd(widths[2] ?? 0)}  ${verdictOf(row.isMet)}`,
      );
    }
  }
}

/** Where and on what a suite ran. */
export interface MachineFacts {
  readonly cpuModel: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly node: string;
  readonly platform: string;
}

/** One suite's run, as the results file shows it. */
export interface SuiteResults {
  readonly suite: string;
  readonly startedAt: Date;
  readonly durationMs: number;
  /** `git describe`-like: the commit, and whether the tree had uncommitted changes. */
  readonly commit: string;
  readonly machine: MachineFacts;
  /** The 1, 5 and 15 minute load averages. */
  readonly loadAtStart: readonly number[];
  readonly loadAtEnd: readonly number[];
  readonly targets: readonly TargetResult[];
  /** What the suite printed to stdout (child processes' own output is not in it). */
  readonly output: string;
  /** Set when the suite threw: its message. */
  readonly failure: string | null;
}

export function machineFacts(): MachineFacts {
  return {
    cpuModel: cpus()[0]?.model.trim() ?? "unknown",
    cores: availableParallelism(),
    memoryGiB: totalmem() / 1024 ** 3,
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
  };
}

function currentCommit(cwd: string): string {
  try {
    const hash = execFileSync("git", ["rev-parse", "--short=12", "HEAD"], {
      cwd,
      encoding: "utf8",
    }).trim();
    const changes = execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], {
      cwd,
      encoding: "utf8",
    }).trim();
    return changes === "" ? hash : `${hash} with uncommitted changes`;
  } catch {
    return "unknown (not a git checkout)";
  }
}

function loadText(load: readonly number[], cores: number): string {
  const [one = 0, five = 0, fifteen = 0] = load;
  return `${one.toFixed(2)} / ${five.toFixed(2)} / ${fifteen.toFixed(2)} (1 / 5 / 15 min); ${(one / cores).toFixed(2)} per core`;
}

function cell(text: string): string {
  return text.replaceAll("|", "\\|").replaceAll("\n", " ");
}

function durationText(ms: number): string {
  const seconds = Math.round(ms / 1000);
  return seconds < 60 ? `${seconds} s` : `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
}

/** The results file's text: a header of facts, the targets with their verdicts, the output. */
export function renderSuiteResults(results: SuiteResults): string {
  const { machine, targets } = results;
  const passed = targets.filter((target) => target.isMet).length;
  const lines = [
    `# Bench results: ${results.suite}`,
    "",
    `Written by \`npm run bench -- ${results.suite}\` (bench/results.ts); a new run replaces this file. The method, and why each target is set where it is: [bench/README.md](../README.md).`,
    "",
    "| | |",
    "| --- | --- |",
    `| Started | ${results.startedAt.toISOString()} (took ${durationText(results.durationMs)}) |`,
    `| Commit | ${cell(results.commit)} |`,
    `| Machine | ${cell(machine.cpuModel)}; ${machine.cores} cores; ${machine.memoryGiB.toFixed(1)} GiB; ${machine.platform} |`,
    `| Node | ${machine.node} |`,
    `| Load average at start | ${loadText(results.loadAtStart, machine.cores)} |`,
    `| Load average at end | ${loadText(results.loadAtEnd, machine.cores)} |`,
    `| Outcome | ${results.failure === null ? "finished" : `failed: ${cell(results.failure)}`} |`,
    "",
    "## Targets",
    "",
  ];
  if (targets.length === 0) {
    lines.push("This suite has no targets: its figures are information (see the output).");
  } else {
    lines.push(
      `${targets.length} targets: ${passed} PASS, ${targets.length - passed} SHORT.`,
      "",
      "| Group | Target | Measured | Aim | Verdict |",
      "| --- | --- | --- | --- | --- |",
      ...targets.map(
        (target) =>
          `| ${cell(target.group)} | ${cell(target.name)} | ${cell(target.measured)} | ${cell(target.aim)} | ${verdictOf(target.isMet)} |`,
      ),
    );
  }
  lines.push("", "## Output", "", "```text", results.output.trimEnd(), "```", "");
  return lines.join("\n");
}

/** Tees process.stdout into a buffer until `stop()`. */
function captureStdout(): { stop(): string } {
  const chunks: string[] = [];
  const write = process.stdout.write;
  const tee = (chunk: unknown, ...rest: unknown[]): boolean => {
    chunks.push(typeof chunk === "string" ? chunk : Buffer.from(chunk as Uint8Array).toString());
    return (write as (...args: unknown[]) => boolean).call(process.stdout, chunk, ...rest);
  };
  process.stdout.write = tee as typeof process.stdout.write;
  return {
    stop() {
      process.stdout.write = write;
      return chunks.join("");
    },
  };
}

/** The directory results files go to: `BENCH_RESULTS_DIR`, or bench/results. */
export function resultsDirectory(): string {
  const given = process.env.BENCH_RESULTS_DIR;
  return given !== undefined && given !== "" ? given : path.join(import.meta.dirname, "results");
}

/**
 * Runs one suite and writes `<directory>/<suite>.md`, also when the suite throws (the file says
 * so, and the error is thrown on).
 */
export async function runAndRecord(
  suite: string,
  run: () => Promise<void>,
  directory = resultsDirectory(),
): Promise<string> {
  takeRecordedTargets();
  const machine = machineFacts();
  const loadAtStart = loadavg();
  const startedAt = new Date();
  const startedMs = performance.now();
  const capture = captureStdout();
  let failure: unknown = null;
  let isFailed = false;
  try {
    await run();
  } catch (error: unknown) {
    failure = error;
    isFailed = true;
  }
  const output = capture.stop();
  const file = path.join(directory, `${suite}.md`);
  mkdirSync(directory, { recursive: true });
  writeFileSync(
    file,
    renderSuiteResults({
      suite,
      startedAt,
      durationMs: performance.now() - startedMs,
      commit: currentCommit(import.meta.dirname),
      machine,
      loadAtStart,
      loadAtEnd: loadavg(),
      targets: takeRecordedTargets(),
      output,
      failure: isFailed ? (failure instanceof Error ? failure.message : String(failure)) : null,
    }),
  );
  console.log(`\nbench: wrote ${path.relative(process.cwd(), file)}`);
  if (isFailed) throw failure;
  return file;
}
