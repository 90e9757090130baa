/**
 * Per-minute counts of a few scopes over a span, for live charts (the dry-run pages): the same
 * stored history and live minutes as every other chart (`loadScopeMinutes`), for the scopes asked.
 *
 * Redis being unreachable is not an error here: the history is returned with `isLive: false`, and
 * the page says the last minutes are missing.
 */

import type { MetricsReadingRedis } from "@limitplane/enforcer/publication";
import type { ReadDeps } from "../deps";
import { loadScopeMinutes } from "../metric-minute/load-scope-minutes";
import type { ScopeMinuteCount } from "../metric-minute/minute-counts";

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
}

export interface ScopeCounts {
  /** One per scope and minute that had traffic, oldest first. */
  readonly rows: readonly ScopeMinuteCount[];
  /** False when the live minutes could not be read from Redis. */
  readonly isLive: boolean;
}

export async function readScopeCounts(
  options: ReadScopeCountsOptions,
  deps: ScopeCountsDeps,
): Promise<ScopeCounts> {
  const scopes = [...new Set(options.scopes)];
  if (scopes.length === 0 || !(options.toMs > options.fromMs)) return { rows: [], isLive: true };
  const minutes = await loadScopeMinutes(
    { fromMs: options.fromMs, toMs: options.toMs, nowMs: options.nowMs, scopes },
    { db: deps.db, live: deps.redis === null ? null : { redis: deps.redis, prefix: deps.prefix } },
  );
  return {
    rows: minutes.rows.map(({ degraded: _degraded, ...counts }) => counts),
    isLive: minutes.hasLiveMinutes,
  };
}
