/**
 * Rolls the enforcers' per-minute, per-scope counts up from Redis into Postgres (`MetricMinute`),
 * and the outbound limiters' per-budget figures kept in the same hashes (`OutboundMinute`), so
 * charts have history after the Redis hashes expire (6 h), and deletes rows older than the
 * retention. One read of a minute's hash gives both; both are written in one transaction.
 *
 * Each run re-reads the last `lookbackMinutes` complete minutes as well as any it has not read
 * yet, and writes each (scope, minute) with the hash's current totals: an upsert that SETS the
 * values, never adds, so repeating a run, two workers running it, or a late flush arriving after a
 * minute was first rolled up all end with the same rows. A minute counts as complete `settleMs`
 * after it ended (enforcers flush every second).
 */

import type { Clock } from "@limitplane/enforcer/limiter";
import {
  enforcerRedisNames,
  type MetricsReadingRedis,
  parseOutboundCounts,
  scopeMinuteCountsOf,
} from "@limitplane/enforcer/publication";
import type { PrismaClient } from "@/lib/generated/prisma/client";

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;
/** Largest value of an `Int` column; a count beyond it (35 M requests/s on one scope) is clamped. */
const MAX_INT = 2_147_483_647;

export interface MetricsRollupDeps {
  readonly db: PrismaClient;
  /** A `control` client. */
  readonly redis: MetricsReadingRedis;
  /** REDIS_KEY_PREFIX. */
  readonly prefix: string;
  /** Wall clock, ms. */
  readonly clock: Clock;
  /**
   * The region `redis` belongs to (REGIONS): its rows are written under its name, so regions never
   * overwrite each other's counts. @default "" (one Redis)
   */
  readonly region?: string;
}

export interface RollUpMetricMinutesOptions {
  /** Rows whose minute is older than this many days are deleted. METRICS_RETENTION_DAYS. */
  readonly retentionDays: number;
  /**
   * The last minute read by an earlier run (epoch minute), or null when unknown (a new worker):
   * the run then starts from the newest row in Postgres, at most `catchUpMinutes` back.
   */
  readonly readThroughMinute: number | null;
  /** Complete minutes re-read on every run, for counts flushed late. @default 3 */
  readonly lookbackMinutes?: number;
  /** How far back a run may reach: the enforcers' per-minute hashes live 6 h. @default 360 */
  readonly catchUpMinutes?: number;
  /** Most minutes read per run; the rest wait for the next. @default 120 */
  readonly maxMinutesPerRun?: number;
  /** A minute is complete this long after it ended. @default 5_000 */
  readonly settleMs?: number;
}

export interface MetricsRollupResult {
  /** The epoch minutes read, oldest first. */
  readonly minutesRead: number;
  /** `MetricMinute` rows written. */
  readonly rowsWritten: number;
  /** `OutboundMinute` rows written. */
  readonly outboundRowsWritten: number;
  readonly rowsDeleted: number;
  /** The last minute read (pass it back as `readThroughMinute`), or null when none was. */
  readonly readThroughMinute: number | null;
  /** Complete minutes remain unread (more than `maxMinutesPerRun` were due). */
  readonly hasMore: boolean;
}

export async function rollUpMetricMinutes(
  deps: MetricsRollupDeps,
  options: RollUpMetricMinutesOptions,
): Promise<MetricsRollupResult> {
  const lookbackMinutes = options.lookbackMinutes ?? 3;
  const catchUpMinutes = options.catchUpMinutes ?? 360;
  const maxMinutesPerRun = options.maxMinutesPerRun ?? 120;
  const settleMs = options.settleMs ?? 5_000;
  if (!(Number.isInteger(options.retentionDays) && options.retentionDays >= 1)) {
    throw new RangeError(`retentionDays must be a whole number >= 1, got ${options.retentionDays}`);
  }
  const nowMs = deps.clock.nowMs();
  const region = deps.region ?? "";
  const lastComplete = Math.floor((nowMs - settleMs) / MINUTE_MS) - 1;
  const earliest = lastComplete - catchUpMinutes + 1;

  let readThrough = options.readThroughMinute;
  if (readThrough === null) {
    const newest = await deps.db.metricMinute.aggregate({
      where: { region },
      _max: { minute: true },
    });
    const newestMinute = newest._max.minute;
    readThrough = newestMinute === null ? earliest - 1 : newestMinute.getTime() / MINUTE_MS;
  }
  const from = Math.max(earliest, Math.min(readThrough + 1, lastComplete - lookbackMinutes + 1));
  const to = Math.min(lastComplete, from + maxMinutesPerRun - 1);

  let rowsWritten = 0;
  let outboundRowsWritten = 0;
  const names = enforcerRedisNames(deps.prefix);
  for (let minute = from; minute <= to; minute++) {
    const fields = await deps.redis.hgetall(names.metricsMinute(minute));
    const counts = scopeMinuteCountsOf(fields, minute);
    const outbound = parseOutboundCounts(fields);
    if (counts.length === 0 && outbound.length === 0) continue;
    const at = new Date(minute * MINUTE_MS);
    await deps.db.$transaction([
      ...counts.map((row) => {
        const values = {
          allowed: clampInt(row.allowed),
          rejected: clampInt(row.rejected),
          wouldReject: clampInt(row.wouldReject),
          degraded: clampInt(row.degraded),
        };
        return deps.db.metricMinute.upsert({
          where: { region_scope_minute: { region, scope: row.scope, minute: at } },
          create: { region, scope: row.scope, minute: at, ...values },
          update: values,
          select: { scope: true },
        });
      }),
      ...outbound.map((row) => {
        const values = {
          calls: clampInt(row.calls),
          waitBuckets: row.waitBuckets.map(clampInt),
          waitMaxed: clampInt(row.waitMaxed),
          waitAborted: clampInt(row.waitAborted),
          peakInFlight: clampInt(row.peakInFlight),
          ttlFreed: clampInt(row.ttlFreed),
        };
        return deps.db.outboundMinute.upsert({
          where: { region_scope_minute: { region, scope: row.scope, minute: at } },
          create: { region, scope: row.scope, minute: at, ...values },
          update: values,
          select: { scope: true },
        });
      }),
    ]);
    rowsWritten += counts.length;
    outboundRowsWritten += outbound.length;
  }

  const before = new Date(nowMs - options.retentionDays * DAY_MS);
  const [deleted, outboundDeleted] = await Promise.all([
    deps.db.metricMinute.deleteMany({ where: { minute: { lt: before } } }),
    deps.db.outboundMinute.deleteMany({ where: { minute: { lt: before } } }),
  ]);
  const minutesRead = Math.max(0, to - from + 1);
  return {
    minutesRead,
    rowsWritten,
    outboundRowsWritten,
    rowsDeleted: deleted.count + outboundDeleted.count,
    readThroughMinute: minutesRead > 0 ? to : readThrough,
    hasMore: to < lastComplete,
  };
}

function clampInt(value: number): number {
  return Math.min(MAX_INT, Math.max(0, Math.floor(value)));
}
