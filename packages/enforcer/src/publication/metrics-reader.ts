/**
 * Reading back what enforcers flushed to Redis (`reporters.ts`): the per-scope counts of one
 * minute, for the worker's rollup into Postgres and for anything that charts the live buckets.
 */
import {
  enforcerRedisNames,
  parseDecisionCounts,
  parseScopeCounts,
  type ScopeCountField,
} from "./redis-keys";

/** The command the reader uses; an ioredis client satisfies it. */
export interface MetricsReadingRedis {
  hgetall(key: string): Promise<Record<string, string>>;
}

/** One scope's counts over one minute, summed over every enforcer. */
export interface ScopeMinuteCounts extends Record<ScopeCountField, number> {
  readonly scope: string;
  /** Start of the minute, epoch ms. */
  readonly minuteStartMs: number;
}

/** The per-scope counts of the minute that starts at `epochMinute * 60_000`, sorted by scope. */
export async function readScopeMinute(
  redis: MetricsReadingRedis,
  prefix: string,
  epochMinute: number,
): Promise<ScopeMinuteCounts[]> {
  const fields = await redis.hgetall(enforcerRedisNames(prefix).metricsMinute(epochMinute));
  return scopeMinuteCountsOf(fields, epochMinute);
}

/**
 * The per-scope counts in a minute hash's fields (read by the caller, who may parse other
 * figures from the same read: `parseOutboundCounts`), sorted by scope.
 */
export function scopeMinuteCountsOf(
  fields: Readonly<Record<string, string>>,
  epochMinute: number,
): ScopeMinuteCounts[] {
  return [...parseScopeCounts(fields)]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([scope, counts]) => ({ scope, minuteStartMs: epochMinute * 60_000, ...counts }));
}

/** What every enforcer decided over one minute, whatever the scope, by who answered. */
export interface DecisionMinuteCounts {
  /** Start of the minute, epoch ms. */
  readonly minuteStartMs: number;
  /** Every decision counted (the sum over sources). */
  readonly decisions: number;
  /** Decisions made without Redis, by why (`@failure|<failure>`). */
  readonly withoutStore: {
    readonly storeError: number;
    readonly timeout: number;
    readonly circuitOpen: number;
  };
}

/**
 * The fleet's decisions in the minute that starts at `epochMinute * 60_000`, and how many were
 * made without Redis (the degraded-decision alert's input).
 */
export async function readDecisionMinute(
  redis: MetricsReadingRedis,
  prefix: string,
  epochMinute: number,
): Promise<DecisionMinuteCounts> {
  const fields = await redis.hgetall(enforcerRedisNames(prefix).metricsMinute(epochMinute));
  return { minuteStartMs: epochMinute * 60_000, ...parseDecisionCounts(fields) };
}
