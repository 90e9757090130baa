/**
 * What outbound limiters report per minute and budget (`enforcer/outbound-metrics.ts` writes it,
 * the worker's roll-up reads it): fields of the same per-minute hash as the enforcers' per-scope
 * counts (`metrics:min:<epochMinute>`, `redis-keys.ts`), under the budget's scope
 * `outbound:<name>`, so one read of a minute gives both and one TTL bounds both.
 *
 * | Field | Meaning | Written with |
 * | --- | --- | --- |
 * | `outbound:<name>\|calls` | permits granted (`acquire` resolved) | HINCRBY |
 * | `outbound:<name>\|wait:<i>` | granted calls whose wait fell in bucket i ({@link waitBucketOf}) | HINCRBY |
 * | `outbound:<name>\|waitMaxed` | waits refused or ended by `maxWaitMs` (code `max-wait`) | HINCRBY |
 * | `outbound:<name>\|waitAborted` | waits ended by the caller's signal (code `aborted`) | HINCRBY |
 * | `outbound:<name>\|ttlFreed` | slots freed by their TTL: reaped, uncounted by any holder | HINCRBY |
 * | `outbound:<name>\|peakInFlight` | most slots held at once on one key, when a slot was taken | max (a script) |
 *
 * The per-scope parser (`parseScopeCounts`) skips these fields: their last part is not one of its
 * counts.
 */
import { enforcerRedisNames } from "./redis-keys";

/**
 * Wait buckets: bucket 0 holds waits under 1 ms, bucket i (1 to {@link WAIT_BUCKET_COUNT} - 1)
 * waits in [2^(i-1), 2^i) ms; the last holds everything from 2^21 ms (35 min, past any
 * `maxWaitMs`: at most an hour) up. Log2 buckets: a percentile read from them is at most twice
 * the true wait, whatever its size, with 23 fields per budget and minute.
 */
export const WAIT_BUCKET_COUNT = 23;

/** The bucket a wait of `waitMs` falls in. */
export function waitBucketOf(waitMs: number): number {
  if (!(waitMs >= 1)) return 0;
  return Math.min(WAIT_BUCKET_COUNT - 1, Math.floor(Math.log2(waitMs)) + 1);
}

/** The exclusive upper bound of bucket `index`, in ms: 2^index (Infinity for the last). */
export function waitBucketUpperMs(index: number): number {
  return index >= WAIT_BUCKET_COUNT - 1 ? Number.POSITIVE_INFINITY : 2 ** index;
}

/** The counts of one budget's minute, summed over every limiter (the peak is the largest). */
export interface OutboundMinuteCounts {
  /** `outbound:<name>`. */
  readonly scope: string;
  readonly calls: number;
  readonly waitMaxed: number;
  readonly waitAborted: number;
  readonly ttlFreed: number;
  readonly peakInFlight: number;
  /** {@link WAIT_BUCKET_COUNT} counts, by bucket. */
  readonly waitBuckets: readonly number[];
}

export const OUTBOUND_COUNT_FIELDS = [
  "calls",
  "waitMaxed",
  "waitAborted",
  "ttlFreed",
  "peakInFlight",
] as const;
export type OutboundCountField = (typeof OUTBOUND_COUNT_FIELDS)[number];

/** One budget's figures as counters: every count at 0, every wait bucket at 0. */
export type OutboundCounters = { -readonly [K in OutboundCountField]: number } & {
  waitBuckets: number[];
};

/** A budget's counters before anything is counted. */
export function emptyOutboundCounters(): OutboundCounters {
  return {
    calls: 0,
    waitMaxed: 0,
    waitAborted: 0,
    ttlFreed: 0,
    peakInFlight: 0,
    waitBuckets: new Array<number>(WAIT_BUCKET_COUNT).fill(0),
  };
}

/** A field of a budget's figures: `<scope>|<count>` or `<scope>|wait:<bucket>`. */
export function outboundField(scope: string, field: OutboundCountField | number): string {
  return typeof field === "number" ? `${scope}|wait:${field}` : `${scope}|${field}`;
}

const OUTBOUND_FIELD = /^(outbound:[^|]+)\|(?:wait:(\d{1,2})|([A-Za-z]+))$/;

function isOutboundCountField(text: string): text is OutboundCountField {
  return OUTBOUND_COUNT_FIELDS.some((field) => field === text);
}

/**
 * The outbound figures in a minute hash's fields, by scope, sorted. Other fields are skipped; a
 * value that is not a whole number from 0 reads as 0.
 */
export function parseOutboundCounts(
  fields: Readonly<Record<string, string>>,
): OutboundMinuteCounts[] {
  const byScope = new Map<string, OutboundCounters>();
  for (const [field, raw] of Object.entries(fields)) {
    const match = OUTBOUND_FIELD.exec(field);
    if (match === null) continue;
    const [, scope = "", bucketText, countName] = match;
    const bucket = bucketText === undefined ? null : Number(bucketText);
    if (bucket !== null && bucket >= WAIT_BUCKET_COUNT) continue;
    if (countName !== undefined && !isOutboundCountField(countName)) continue;
    let counts = byScope.get(scope);
    if (counts === undefined) {
      counts = emptyOutboundCounters();
      byScope.set(scope, counts);
    }
    const number = Number(raw);
    const value = Number.isSafeInteger(number) && number >= 0 ? number : 0;
    if (bucket !== null) counts.waitBuckets[bucket] = value;
    else if (countName !== undefined && isOutboundCountField(countName)) counts[countName] = value;
  }
  return [...byScope]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([scope, counts]) => ({ scope, ...counts }));
}

/** The command the reader sends; an ioredis client satisfies it. */
export interface OutboundMinuteReadingRedis {
  hgetall(key: string): Promise<Record<string, string>>;
}

/** Every budget's figures of the minute that starts at `epochMinute * 60_000`, by scope. */
export async function readOutboundMinute(
  redis: OutboundMinuteReadingRedis,
  prefix: string,
  epochMinute: number,
): Promise<OutboundMinuteCounts[]> {
  return parseOutboundCounts(
    await redis.hgetall(enforcerRedisNames(prefix).metricsMinute(epochMinute)),
  );
}
