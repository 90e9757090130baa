/**
 * Benchmark runner: `npm run bench` runs every registered suite, `npm run bench -- core` only the
 * named ones. A benchmark prints figures for people to read; it is not a test and asserts
 * nothing. Node runs with --expose-gc (see package.json) so suites can measure memory. After each
 * suite the runner writes bench/results/<suite>.md (./results.ts): the machine, the load, every
 * target with its verdict, and the suite's output. The method is in bench/README.md.
 *
 * To add a suite, add one line to SUITES: its name and a lazy import of a module exporting
 * `run(): Promise<void>`. Lazy, so that running one suite never loads another's dependencies
 * (a Redis client, a server).
 */

import { runAndRecord } from "./results";

interface BenchSuite {
  run(): Promise<void>;
}

const SUITES: Record<string, () => Promise<BenchSuite>> = {
  audit: () => import("./audit"),
  backtest: () => import("./backtest"),
  baseline: () => import("./baseline"),
  "cold-start": () => import("./cold-start"),
  import: () => import("./import"),
  core: () => import("./core"),
  enforcer: () => import("./enforcer"),
  failover: () => import("./failover"),
  "lease-fairness": () => import("./lease-fairness"),
  outbound: () => import("./outbound"),
  redis: () => import("./redis"),
  "redis-instructions": () => import("./redis-instructions"),
  regions: () => import("./regions"),
  "ratelimit-service": () => import("./ratelimit-service"),
  "request-cost": () => import("./request-cost"),
  scale: () => import("./scale"),
  staged: () => import("./staged"),
};

async function main(): Promise<void> {
  const requested = process.argv.slice(2);
  const unknown = requested.filter((name) => !(name in SUITES));
  if (unknown.length > 0) {
    console.error(
      `unknown suite(s): ${unknown.join(", ")}; known: ${Object.keys(SUITES).join(", ")}`,
    );
    process.exitCode = 2;
    return;
  }
  const names = requested.length > 0 ? requested : Object.keys(SUITES);
  for (const name of names) {
    const load = SUITES[name];
    if (load === undefined) continue;
    console.log(`\n=== bench: ${name} ===`);
    const suite = await load();
    await runAndRecord(name, () => suite.run());
  }
}

await main();
