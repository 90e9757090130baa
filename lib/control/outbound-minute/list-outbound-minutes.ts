import type { ReadDeps } from "../deps";

/** One outbound budget's figures over one minute, as rolled up from its limiters (`OutboundMinute`). */
export interface OutboundMinuteRecord {
  /** `outbound:<name>`. */
  readonly scope: string;
  /** Start of the minute, epoch ms. */
  readonly minuteStartMs: number;
  readonly calls: number;
  /** Granted calls by wait, in the log2 buckets of `publication/outbound-minutes.ts`. */
  readonly waitBuckets: readonly number[];
  readonly waitMaxed: number;
  readonly waitAborted: number;
  readonly peakInFlight: number;
  readonly ttlFreed: number;
}

export interface ListOutboundMinutesOptions {
  /** The budget's name (the scope is `outbound:<name>`). */
  readonly name: string;
  /** Inclusive, epoch ms. */
  readonly fromMs: number;
  /** Exclusive. */
  readonly toMs: number;
}

/**
 * One budget's per-minute figures in `[fromMs, toMs)`, oldest first, every region's rows (the
 * series math adds them up, and takes the larger peak).
 */
export async function listOutboundMinutes(
  options: ListOutboundMinutesOptions,
  deps: ReadDeps,
): Promise<OutboundMinuteRecord[]> {
  if (!(Number.isFinite(options.fromMs) && Number.isFinite(options.toMs))) {
    throw new RangeError("fromMs and toMs must be finite epoch milliseconds");
  }
  const rows = await deps.db.outboundMinute.findMany({
    where: {
      scope: `outbound:${options.name}`,
      minute: { gte: new Date(options.fromMs), lt: new Date(options.toMs) },
    },
    orderBy: [{ minute: "asc" }, { region: "asc" }],
    select: {
      scope: true,
      minute: true,
      calls: true,
      waitBuckets: true,
      waitMaxed: true,
      waitAborted: true,
      peakInFlight: true,
      ttlFreed: true,
    },
  });
  return rows.map(({ minute, ...row }) => ({ ...row, minuteStartMs: minute.getTime() }));
}
