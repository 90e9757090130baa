import type { ReadDeps } from "../control-deps";
import type { FleetDeps } from "../fleet/fleet-deps";
import { readLiveMinutes } from "../fleet/read-live-minutes";
import { listMetricMinutes, type MetricMinuteRecord } from "./list-metric-minutes";

export interface ScopeMinutes {
  /** Oldest minute first; per-minute, per-scope counts up to and including the current minute. */
  readonly rows: readonly MetricMinuteRecord[];
  /**
   * Whether the newest minutes came from Redis (the current minute is then included). False when
   * Redis could not be read: the rows are then what the roll-up has stored, a minute or so behind.
   */
  readonly hasLiveMinutes: boolean;
}

const MINUTE_MS = 60_000;

/**
 * Per-minute counts from `fromMs` to now: `MetricMinute` rows, with the newest few minutes (which
 * the worker may not have rolled up yet) and the current one read from the enforcers' Redis
 * buckets when `live` is given. A minute Redis has counts for replaces the stored rows of that
 * minute (they hold the same totals, copied later); a minute Redis has nothing for keeps them.
 */
export async function loadScopeMinutes(
  options: { fromMs: number; nowMs: number },
  deps: ReadDeps & { live: Pick<FleetDeps, "redis" | "prefix"> | null },
): Promise<ScopeMinutes> {
  const toMs = (Math.floor(options.nowMs / MINUTE_MS) + 1) * MINUTE_MS;
  const [stored, live] = await Promise.all([
    listMetricMinutes({ fromMs: options.fromMs, toMs }, deps),
    deps.live === null
      ? Promise.resolve(null)
      : readLiveMinutes({ nowMs: options.nowMs }, deps.live).catch(() => null),
  ]);
  if (live === null) return { rows: stored, hasLiveMinutes: false };
  const liveMinutes = new Set(
    live.rows.filter((row) => row.minuteStartMs >= options.fromMs).map((row) => row.minuteStartMs),
  );
  const rows = [
    ...stored.filter((row) => !liveMinutes.has(row.minuteStartMs)),
    ...live.rows.filter((row) => liveMinutes.has(row.minuteStartMs)),
  ].sort((a, b) => a.minuteStartMs - b.minuteStartMs);
  return { rows, hasLiveMinutes: true };
}
