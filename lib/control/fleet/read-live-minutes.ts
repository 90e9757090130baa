import { type MetricsReadingRedis, readScopeMinute } from "@limitplane/enforcer/publication";
import type { MetricMinuteRecord } from "../metric-minute/list-metric-minutes";

const MINUTE_MS = 60_000;

/** What reading the live minutes needs: one command, and the key prefix. */
export interface LiveMinutesDeps {
  readonly redis: MetricsReadingRedis;
  /** REDIS_KEY_PREFIX. */
  readonly prefix: string;
}

/**
 * The newest minutes straight from the enforcers' Redis buckets (`metrics:min:<epochMinute>`):
 * the current minute, which the worker has not rolled up yet, and `extraMinutes` before it, which
 * it may not have either. One HGETALL per minute. The totals are the same ones the roll-up copies,
 * so for these minutes they replace the Postgres rows rather than add to them.
 */
export async function readLiveMinutes(
  options: { nowMs: number; extraMinutes?: number },
  deps: LiveMinutesDeps,
): Promise<{ fromMs: number; rows: MetricMinuteRecord[] }> {
  const currentMinute = Math.floor(options.nowMs / MINUTE_MS);
  const first = currentMinute - Math.max(0, options.extraMinutes ?? 2);
  const minutes: number[] = [];
  for (let minute = first; minute <= currentMinute; minute++) minutes.push(minute);
  const perMinute = await Promise.all(
    minutes.map((minute) => readScopeMinute(deps.redis, deps.prefix, minute)),
  );
  return { fromMs: first * MINUTE_MS, rows: perMinute.flat() };
}
