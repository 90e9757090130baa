// @ts-check
/**
 * What `npm run up` shows of its long steps (npm install, next build): a line saying what runs,
 * progress while it runs, then only what a person needs (warnings, errors, a one-line result),
 * never the whole route table. A step that fails prints everything it said, so nothing is lost.
 *
 * Plain JavaScript because it runs before `npm install` has put tsx in place (package.json's
 * "up" runs scripts/up-install.mjs first); scripts/up.ts imports it too (types in
 * quiet-step.d.mts).
 */
import { spawn } from "node:child_process";

// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colour codes are control characters
const ANSI = /\u001b\[[0-9;?]*[A-Za-z]/g;

/** @param {string} output */
function lines(output) {
  return output
    .replace(ANSI, "")
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== "");
}

/**
 * The lines of `npm install` worth showing: every warning and error as npm wrote it (nothing is
 * hidden), and its summary ("added 3 packages in 12s", "up to date in 2s").
 * @param {string} output
 * @returns {string[]}
 */
export function npmInstallLines(output) {
  return lines(output).filter(
    (line) =>
      /^npm (warn|error|ERR!)/i.test(line) ||
      /^(added|removed|changed|up to date|audited)\b/.test(line),
  );
}

/**
 * The lines of `next build` worth showing: warnings, errors and how long compiling took. Not the
 * route table, the telemetry notice or the phase-by-phase chatter.
 * @param {string} output
 * @returns {string[]}
 */
export function nextBuildLines(output) {
  return lines(output).filter(
    (line) =>
      /^(⚠|✗|⨯)/.test(line) ||
      /\b(warn(ing)?|error|failed)\b/i.test(line) ||
      /Compiled successfully/.test(line),
  );
}

/**
 * A progress line for a step that has run `elapsedMs` so far.
 * @param {string} doing e.g. "installing"
 * @param {number} elapsedMs
 */
export function progressLine(doing, elapsedMs) {
  return `  … still ${doing} (${Math.round(elapsedMs / 1000)} s)`;
}

/**
 * @typedef {object} QuietStepOptions
 * @property {string} label What the step does, shown first ("Installing the dependencies").
 * @property {string} doing For the progress line ("installing").
 * @property {(output: string) => string[]} keep Which lines to show when it succeeds.
 * @property {number} [progressEveryMs] How often progress is shown. @default 15000
 * @property {(line: string) => void} [write] Where lines go. @default console.log
 */

/**
 * Runs `command` with its output captured: a progress line every `progressEveryMs`, then the lines
 * `keep` selects and the time it took; on failure, its whole output.
 * @param {string} command
 * @param {readonly string[]} args
 * @param {QuietStepOptions & { cwd?: string, env?: NodeJS.ProcessEnv, onSpawn?: (child: import("node:child_process").ChildProcess) => void, detached?: boolean }} options
 * @returns {Promise<void>}
 */
export function runQuietly(command, args, options) {
  const write = options.write ?? ((line) => console.log(line));
  const startedAtMs = Date.now();
  write(`\u25b8 ${options.label}`);
  return new Promise((resolve, reject) => {
    const child = spawn(command, [...args], {
      cwd: options.cwd,
      env: options.env,
      stdio: ["ignore", "pipe", "pipe"],
      detached: options.detached ?? false,
    });
    options.onSpawn?.(child);
    let output = "";
    child.stdout?.on("data", (chunk) => {
      output += String(chunk);
    });
    child.stderr?.on("data", (chunk) => {
      output += String(chunk);
    });
    const timer = setInterval(
      () => write(progressLine(options.doing, Date.now() - startedAtMs)),
      options.progressEveryMs ?? 15_000,
    );
    timer.unref();
    child.on("error", (error) => {
      clearInterval(timer);
      reject(error);
    });
    child.on("exit", (code, signal) => {
      clearInterval(timer);
      const seconds = ((Date.now() - startedAtMs) / 1000).toFixed(0);
      if (code === 0) {
        for (const line of options.keep(output)) write(`  ${line.trim()}`);
        write(`  done in ${seconds} s`);
        resolve();
        return;
      }
      write(output.trimEnd());
      reject(new Error(`${[command, ...args].join(" ")} exited with ${code ?? signal}`));
    });
  });
}
