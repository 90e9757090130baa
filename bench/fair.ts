/**
 * What every comparison in `bench/` shares, so that each suite measures the same way:
 *
 * - a Redis of the bench's own ({@link benchRedis}): `BENCH_REDIS_URL` when set, otherwise a
 *   private `redis-server` on a free port, so `INFO commandstats` counts the bench's commands only;
 * - medians of alternating runs with their spread ({@link summary});
 * - the load average ({@link loadLine});
 * - Redis's own time in the scripts ({@link scriptStats});
 * - each target printed with its exact aim and PASS or SHORT, and recorded for the results file
 *   (`Targets` in ./results).
 */
import { availableParallelism, loadavg } from "node:os";
import { OwnRedisServer } from "@limitplane/enforcer/testing";
import type { Redis } from "ioredis";

/** At least this many alternating runs behind every median a target reads. */
export const MIN_RUNS = 5;

/** The 1-minute load average over the cores: above 1, other work competed for the CPU. */
export function loadPerCore(): number {
  return (loadavg()[0] ?? 0) / availableParallelism();
}

export function loadLine(when: string): string {
  const [one, five] = loadavg();
  return `load average ${when}: ${(one ?? 0).toFixed(2)} (1 min), ${(five ?? 0).toFixed(2)} (5 min) on ${availableParallelism()} cores = ${loadPerCore().toFixed(2)} per core (above 1, other processes competed for the CPU)`;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] ?? Number.NaN)
    : ((sorted[middle - 1] ?? Number.NaN) + (sorted[middle] ?? Number.NaN)) / 2;
}

/** `median [min-max]` of per-run values, with `digits` decimals. */
export function summary(values: readonly number[], digits = 2): string {
  if (values.length === 0) return "-";
  return `${median(values).toFixed(digits)} [${Math.min(...values).toFixed(digits)}-${Math.max(...values).toFixed(digits)}]`;
}

/** The per-run ratios a / b of two series measured in the same runs, back to back. */
export function pairedRatios(a: readonly number[], b: readonly number[]): number[] {
  return a.map((value, index) => value / (b[index] ?? Number.NaN));
}

export interface BenchRedis {
  readonly url: string;
  /** True when the bench started this Redis (nothing else uses it). */
  readonly isOwn: boolean;
  stop(): Promise<void>;
}

/** `BENCH_REDIS_URL`, or a private redis-server on a free port, stopped by `stop()`. */
export async function benchRedis(): Promise<BenchRedis> {
  const given = process.env.BENCH_REDIS_URL;
  if (given !== undefined && given !== "") {
    return { url: given, isOwn: false, stop: async () => {} };
  }
  const server = await OwnRedisServer.start();
  return { url: server.url, isOwn: true, stop: () => server.stop() };
}

/**
 * Script calls (fcall, evalsha, eval) and the microseconds Redis spent in them so far, from
 * INFO commandstats: every side's decisions are script calls, and a script's inner commands are
 * inside its usec.
 */
export async function scriptStats(redis: Redis): Promise<{ calls: number; usec: number }> {
  const info = await redis.info("commandstats");
  let calls = 0;
  let usec = 0;
  for (const match of info.matchAll(/^cmdstat_(?:evalsha|eval|fcall):calls=(\d+),usec=(\d+)/gm)) {
    calls += Number(match[1]);
    usec += Number(match[2]);
  }
  return { calls, usec };
}

export function describeRedis(redis: BenchRedis): string {
  return redis.isOwn
    ? `a redis-server of the bench's own at ${redis.url} (nothing else uses it)`
    : `BENCH_REDIS_URL=${redis.url} (shared: INFO commandstats includes other clients' commands)`;
}
