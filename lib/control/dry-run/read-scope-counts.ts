/**
 * Per-minute counts of a few scopes over a span, for live charts (the dry-run page): the rolled-up
 * history from Postgres (`MetricMinute`) joined with the enforcers' live per-minute hashes in Redis
 * for the last few minutes, which the worker has not rolled up yet (it waits until a minute is
 * complete, and runs every 15 s). For a minute present in both, Redis wins: the rollup copies the
 * same hash, so the hash is never behind it.
 *
 * Redis being unreachable is not an error here: the history is returned with `isLive: false`, and
 * the page says the last minutes are missing.
 */

import type { ScopeMinuteCount } from "@/lib/console/minute-counts";
import { type MetricsReadingRedis, readScopeMinute } from "@/lib/enforcer/metrics-reader";
import { loadEnv } from "@/lib/server/env";
import { createRedis } from "@/lib/server/redis";
import { getControlDeps, type ReadDeps } from "../control-deps";

const MINUTE_MS = 60_000;

export interface ScopeCountsDeps extends ReadDeps {
  /** A `control` client, or null to read history only. */
  readonly redis: MetricsReadingRedis | null;
  /** REDIS_KEY_PREFIX. */
  readonly prefix: string;
}

export interface ReadScopeCountsOptions {
  readonly scopes: readonly string[];
  /** Inclusive, ms. */
  readonly fromMs: number;
  /** Exclusive, ms. */
  readonly toMs: number;
  /** The wall clock now, ms: live minutes are the ones ending near it. */
  readonly nowMs: number;
  /**
   * How many of the latest minutes are read from Redis as well (the rollup needs up to about a
   * minute and a quarter to store a complete minute). @default 3
   */
  readonly liveMinutes?: number;
}

export interface ScopeCounts {
  /** One per scope and minute that had traffic, oldest first. */
  readonly rows: readonly ScopeMinuteCount[];
  /** False when the live minutes could not be read from Redis. */
  readonly isLive: boolean;
}

export async function readScopeCounts(
  options: ReadScopeCountsOptions,
  deps: ScopeCountsDeps = defaultScopeCountsDeps(),
): Promise<ScopeCounts> {
  const scopes = [...new Set(options.scopes)];
  if (scopes.length === 0 || !(options.toMs > options.fromMs)) return { rows: [], isLive: true };
  const stored = await deps.db.metricMinute.findMany({
    where: {
      scope: { in: scopes },
      minute: { gte: new Date(options.fromMs), lt: new Date(options.toMs) },
    },
    orderBy: [{ minute: "asc" }, { scope: "asc" }],
    select: { scope: true, minute: true, allowed: true, rejected: true, wouldReject: true },
  });
  const byKey = new Map<string, ScopeMinuteCount>();
  for (const row of stored) {
    const minuteStartMs = row.minute.getTime();
    byKey.set(`${row.scope}|${minuteStartMs}`, {
      scope: row.scope,
      minuteStartMs,
      allowed: row.allowed,
      rejected: row.rejected,
      wouldReject: row.wouldReject,
    });
  }

  let isLive = deps.redis !== null;
  if (deps.redis !== null) {
    const liveMinutes = Math.max(1, options.liveMinutes ?? 3);
    const lastMinute = Math.floor(Math.min(options.nowMs, options.toMs - 1) / MINUTE_MS);
    const firstMinute = Math.max(
      Math.ceil(options.fromMs / MINUTE_MS),
      lastMinute - liveMinutes + 1,
    );
    const wanted = new Set(scopes);
    try {
      const minutes: number[] = [];
      for (let minute = firstMinute; minute <= lastMinute; minute++) minutes.push(minute);
      const redis = deps.redis;
      const live = await Promise.all(
        minutes.map((minute) => readScopeMinute(redis, deps.prefix, minute)),
      );
      for (const row of live.flat()) {
        if (!wanted.has(row.scope)) continue;
        byKey.set(`${row.scope}|${row.minuteStartMs}`, {
          scope: row.scope,
          minuteStartMs: row.minuteStartMs,
          allowed: row.allowed,
          rejected: row.rejected,
          wouldReject: row.wouldReject,
        });
      }
    } catch (error: unknown) {
      // The history still stands; the page says the live minutes are missing.
      console.warn("dry-run counts: live minutes unavailable", error);
      isLive = false;
    }
  }
  const rows = [...byKey.values()].sort(
    (a, b) =>
      a.minuteStartMs - b.minuteStartMs || (a.scope < b.scope ? -1 : a.scope > b.scope ? 1 : 0),
  );
  return { rows, isLive };
}

const globalForCounts = globalThis as typeof globalThis & {
  limitplaneScopeCountsRedis?: MetricsReadingRedis;
};

function defaultScopeCountsDeps(): ScopeCountsDeps {
  globalForCounts.limitplaneScopeCountsRedis ??= createRedis("control", {
    connectionName: "limitplane-console-metrics",
  });
  return {
    db: getControlDeps().db,
    redis: globalForCounts.limitplaneScopeCountsRedis,
    prefix: loadEnv().REDIS_KEY_PREFIX,
  };
}
