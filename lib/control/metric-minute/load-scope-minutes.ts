import type { ReadDeps } from "../deps";
import { type LiveMinutesDeps, readLiveMinutes } from "../fleet/read-live-minutes";
import { listMetricMinutes, type MetricMinuteRecord } from "./list-metric-minutes";

export interface LoadScopeMinutesOptions {
  /** Inclusive, epoch ms. */
  readonly fromMs: number;
  /** Exclusive. @default the end of the current minute */
  readonly toMs?: number;
  /** The wall clock: the live minutes are the current one and the two before it. */
  readonly nowMs: number;
  /** Only these scopes. @default every scope */
  readonly scopes?: readonly string[];
  /** Only this region's stored counts (REGIONS); `live` must then be that region's. @default all */
  readonly region?: string;
}

export interface ScopeMinutes {
  /** Oldest minute first, then by scope; per-minute, per-scope counts. */
  readonly rows: readonly MetricMinuteRecord[];
  /**
   * Whether the newest minutes came from Redis (the current minute is then included). False when
   * Redis could not be read or was not asked: the rows are then what the roll-up has stored, a
   * minute or so behind.
   */
  readonly hasLiveMinutes: boolean;
}

const MINUTE_MS = 60_000;

/**
 * Per-minute counts over `[fromMs, toMs)`, for every chart and for the alerts: `MetricMinute`
 * rows, with the newest few minutes (which the worker may not have rolled up yet) and the current
 * one read from the enforcers' Redis buckets when `live` is given. A minute Redis has counts for
 * replaces the stored rows of that minute (they hold the same totals, copied later); a minute Redis
 * has nothing for keeps them. Redis being unreachable is not an error: the stored rows come back
 * with `hasLiveMinutes: false`.
 */
export async function loadScopeMinutes(
  options: LoadScopeMinutesOptions,
  deps: ReadDeps & { live: LiveMinutesDeps | null },
): Promise<ScopeMinutes> {
  const toMs = options.toMs ?? (Math.floor(options.nowMs / MINUTE_MS) + 1) * MINUTE_MS;
  const [stored, live] = await Promise.all([
    listMetricMinutes(
      { fromMs: options.fromMs, toMs, scopes: options.scopes, region: options.region },
      deps,
    ),
    deps.live === null
      ? Promise.resolve(null)
      : readLiveMinutes({ nowMs: options.nowMs }, deps.live).catch((error: unknown) => {
          console.warn("per-minute counts: the live minutes could not be read", error);
          return null;
        }),
  ]);
  if (live === null) return { rows: stored, hasLiveMinutes: false };
  const inRange = live.rows.filter(
    (row) => row.minuteStartMs >= options.fromMs && row.minuteStartMs < toMs,
  );
  const liveMinutes = new Set(inRange.map((row) => row.minuteStartMs));
  const wanted = options.scopes === undefined ? null : new Set(options.scopes);
  const rows = [
    ...stored.filter((row) => !liveMinutes.has(row.minuteStartMs)),
    ...inRange.filter((row) => wanted === null || wanted.has(row.scope)),
  ].sort(
    (a, b) =>
      a.minuteStartMs - b.minuteStartMs || (a.scope < b.scope ? -1 : a.scope > b.scope ? 1 : 0),
  );
  return { rows, hasLiveMinutes: true };
}

/**
 * `loadScopeMinutes` for several regions (REGIONS): each region's stored rows with its own live
 * minutes, read in parallel and put together, so a chart of every region draws their total (the
 * chart math sums the rows of a minute) and a chart of one region draws only its own.
 */
export async function loadRegionScopeMinutes(
  options: Omit<LoadScopeMinutesOptions, "region">,
  regions: readonly { readonly region: string; readonly live: LiveMinutesDeps }[],
  deps: ReadDeps,
): Promise<ScopeMinutes> {
  const loaded = await Promise.all(
    regions.map((entry) =>
      loadScopeMinutes({ ...options, region: entry.region }, { db: deps.db, live: entry.live }),
    ),
  );
  const rows = loaded
    .flatMap((entry) => entry.rows)
    .sort(
      (a, b) =>
        a.minuteStartMs - b.minuteStartMs || (a.scope < b.scope ? -1 : a.scope > b.scope ? 1 : 0),
    );
  return { rows, hasLiveMinutes: loaded.every((entry) => entry.hasLiveMinutes) };
}
