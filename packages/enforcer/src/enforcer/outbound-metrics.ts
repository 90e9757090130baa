/**
 * What an outbound limiter counts per budget and minute, in process, and adds to the minute's
 * hash in Redis on each flush (field layout: `publication/outbound-minutes.ts`): calls granted,
 * their waits in log2 buckets, waits ended by `maxWaitMs` or by an abort, the most slots held at
 * once on one key, and slots freed by their TTL (counted by the Redis call that reaped them).
 *
 * Cheap on the hot path: one comparison finds the current minute, one Map lookup the budget, and
 * a few additions. Cardinality is bounded by budget names (from the policy), never by keys.
 * Minutes wait in process until flushed; past `maxPendingMinutes` the oldest is dropped (and
 * counted), so a dead Redis cannot grow the process.
 */
import type { Clock } from "../limiter/clock";
import type { RedisScriptClient } from "../limiter/stores/redis-script-runner";
import {
  emptyOutboundCounters,
  OUTBOUND_COUNT_FIELDS,
  type OutboundCounters,
  outboundField,
  waitBucketOf,
} from "../publication/outbound-minutes";
import { enforcerRedisNames } from "../publication/redis-keys";

type BudgetCounts = OutboundCounters;

/** One budget's figures over one minute, as deltas since the last drain (the peak as a peak). */
export interface OutboundMinuteDelta {
  readonly epochMinute: number;
  /** `outbound:<name>`. */
  readonly scope: string;
  readonly calls: number;
  readonly waitMaxed: number;
  readonly waitAborted: number;
  readonly ttlFreed: number;
  readonly peakInFlight: number;
  readonly waitBuckets: readonly number[];
}

const MINUTE_MS = 60_000;

export class OutboundMetrics {
  readonly #wallClock: Clock;
  readonly #maxPendingMinutes: number;
  #pending = new Map<number, Map<string, BudgetCounts>>();
  #currentMinute = Number.NaN;
  #current: Map<string, BudgetCounts> | null = null;
  #droppedMinuteCount = 0;

  constructor(options: { readonly wallClock: Clock; readonly maxPendingMinutes?: number }) {
    this.#wallClock = options.wallClock;
    this.#maxPendingMinutes = options.maxPendingMinutes ?? 60;
  }

  /** Minutes dropped unflushed because `maxPendingMinutes` was reached. */
  get droppedMinuteCount(): number {
    return this.#droppedMinuteCount;
  }

  /** A permit granted after waiting `waitedMs`. */
  recordCall(scope: string, waitedMs: number): void {
    const counts = this.#countsOf(scope);
    counts.calls++;
    const bucket = waitBucketOf(waitedMs);
    counts.waitBuckets[bucket] = (counts.waitBuckets[bucket] ?? 0) + 1;
  }

  /** A wait that ended without a permit: by `maxWaitMs`, or by the caller's signal. */
  recordWaitEnded(scope: string, reason: "max-wait" | "aborted"): void {
    const counts = this.#countsOf(scope);
    if (reason === "max-wait") counts.waitMaxed++;
    else counts.waitAborted++;
  }

  /** A slot call's reply: slots held after taking one (0 when none was taken), slots it reaped. */
  recordSlots(scope: string, held: number, expired: number): void {
    if (held <= 0 && expired <= 0) return;
    const counts = this.#countsOf(scope);
    if (held > counts.peakInFlight) counts.peakInFlight = held;
    counts.ttlFreed += expired;
  }

  /** Everything counted since the last drain, oldest minute first, and forgets it. */
  drain(): OutboundMinuteDelta[] {
    const drained: OutboundMinuteDelta[] = [];
    for (const [epochMinute, budgets] of [...this.#pending].sort(([a], [b]) => a - b)) {
      for (const [scope, counts] of budgets) drained.push({ epochMinute, scope, ...counts });
    }
    this.#pending = new Map();
    this.#current = null;
    this.#currentMinute = Number.NaN;
    return drained;
  }

  #countsOf(scope: string): BudgetCounts {
    const minute = Math.floor(this.#wallClock.nowMs() / MINUTE_MS);
    let budgets = this.#current;
    if (budgets === null || minute !== this.#currentMinute) {
      budgets = this.#minute(minute);
      this.#current = budgets;
      this.#currentMinute = minute;
    }
    let counts = budgets.get(scope);
    if (counts === undefined) {
      counts = emptyOutboundCounters();
      budgets.set(scope, counts);
    }
    return counts;
  }

  #minute(minute: number): Map<string, BudgetCounts> {
    let budgets = this.#pending.get(minute);
    if (budgets !== undefined) return budgets;
    if (this.#pending.size >= this.#maxPendingMinutes) {
      const oldest = Math.min(...this.#pending.keys());
      this.#pending.delete(oldest);
      this.#droppedMinuteCount++;
    }
    budgets = new Map();
    this.#pending.set(minute, budgets);
    return budgets;
  }
}

/**
 * Adds one minute's deltas to its hash: ARGV[1] the hash's lifetime in ms, then pairs of field and
 * value; a field ending in `|peakInFlight` keeps the larger value, every other field is added to.
 * One key per call, so it runs on Redis Cluster.
 */
const ADD_OUTBOUND_MINUTE_LUA = `
for i = 2, #ARGV, 2 do
  local field, value = ARGV[i], tonumber(ARGV[i + 1])
  if string.sub(field, -13) == "|peakInFlight" then
    if value > tonumber(redis.call("HGET", KEYS[1], field) or "0") then
      redis.call("HSET", KEYS[1], field, value)
    end
  else
    redis.call("HINCRBY", KEYS[1], field, value)
  end
end
redis.call("PEXPIRE", KEYS[1], ARGV[1])
return 1
`;

/**
 * Writes drained deltas into their minutes' hashes, one script call per minute. Rejects when
 * Redis does: the caller decides whether the counts are lost (they are never sent twice).
 */
export async function writeOutboundMinutes(
  client: Pick<RedisScriptClient, "call">,
  prefix: string,
  deltas: readonly OutboundMinuteDelta[],
  minuteBucketTtlMs: number,
): Promise<void> {
  const byMinute = new Map<number, string[]>();
  for (const delta of deltas) {
    let args = byMinute.get(delta.epochMinute);
    if (args === undefined) {
      args = [];
      byMinute.set(delta.epochMinute, args);
    }
    for (const field of OUTBOUND_COUNT_FIELDS) {
      if (delta[field] > 0) args.push(outboundField(delta.scope, field), String(delta[field]));
    }
    delta.waitBuckets.forEach((count, bucket) => {
      if (count > 0) args.push(outboundField(delta.scope, bucket), String(count));
    });
  }
  const names = enforcerRedisNames(prefix);
  await Promise.all(
    [...byMinute]
      .filter(([, args]) => args.length > 0)
      .map(([minute, args]) =>
        client.call(
          "EVAL",
          ADD_OUTBOUND_MINUTE_LUA,
          "1",
          names.metricsMinute(minute),
          String(minuteBucketTtlMs),
          ...args,
        ),
      ),
  );
}
