/**
 * What the enforcer decided, aggregated in process for a flusher (to Redis, every second or so) and
 * for a Prometheus endpoint ({@link renderPrometheus} in `prometheus.ts`): per-scope counters and a
 * decision-latency histogram, in time buckets drained as deltas, plus running totals for
 * Prometheus. Cardinality is bounded by the number of scopes (which come from the policy), never
 * by keys or subjects: nothing here takes a subject. The console's record of recent rejections is
 * `recent-rejections.ts`.
 */
import type { Clock } from "../limiter/clock";
import { wallClock } from "../limiter/clock";
import type { LimitMode } from "../limiter/types";
import {
  DECISION_SOURCES,
  type DecisionSource,
  STORE_FAILURES,
  type StoreFailure,
  type StoreFailurePolicy,
} from "./types";

/**
 * Upper bounds of the latency buckets, in microseconds: an in-process answer takes microseconds,
 * a Redis round trip about a millisecond, a timeout tens of milliseconds.
 */
export const DEFAULT_LATENCY_BOUNDS_MICROS: readonly number[] = [
  50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000,
];

/** Where scopes beyond `maxScopes` are counted, so a policy mistake cannot explode cardinality. */
export const OTHER_SCOPE = "(other)";

/** The parts of a decision the metrics read. An `EnforcerDecision` fits. */
export interface MetricsDecision {
  readonly allowed: boolean;
  readonly outcomes: readonly {
    readonly scope: string;
    readonly mode: LimitMode;
    readonly allowed: boolean;
    readonly fallback?: StoreFailurePolicy | null;
  }[];
  /** @default "store" */
  readonly source?: DecisionSource;
  /** The store failure behind a degraded decision. @default null */
  readonly failure?: StoreFailure | null;
}

/**
 * One scope's counts. For each request, on each scope it was checked against:
 * - `allowed`: on an enforced scope, the request was admitted (every enforced limit admitted it);
 *   on a dry-run scope, this limit would have admitted it;
 * - `rejected`: this enforced limit rejected it (several may, for one request);
 * - `wouldReject`: this dry-run limit would have rejected it;
 * - `degraded`: this limit was decided by its failure policy because the store failed.
 * A rejected request adds nothing to the enforced scopes that would have admitted it. A dry-run
 * scope counts every request it saw exactly once, as `allowed` or `wouldReject`, so
 * `allowed + rejected + wouldReject` is the requests a scope evaluated (what the console's
 * per-minute rows mean, `lib/control/metric-minute/minute-counts.ts`), and a dry-run scope reads "would reject
 * Y of N" with N = allowed + wouldReject.
 */
export interface ScopeCounts {
  readonly scope: string;
  readonly allowed: number;
  readonly rejected: number;
  readonly wouldReject: number;
  readonly degraded: number;
}

/** A latency histogram. `counts` are per bucket, not cumulative; Prometheus output accumulates. */
export interface LatencyHistogram {
  readonly boundsMicros: readonly number[];
  /** One per bound (values <= that bound and above the previous), then one above every bound. */
  readonly counts: readonly number[];
  readonly sumMicros: number;
  readonly count: number;
}

/** Everything counted over some span. */
export interface MetricsFigures {
  /** Sorted by scope. */
  readonly scopes: readonly ScopeCounts[];
  readonly degradedByFailure: Readonly<Record<StoreFailure, number>>;
  readonly decisionsBySource: Readonly<Record<DecisionSource, number>>;
  readonly latency: LatencyHistogram;
}

/** The figures of one time bucket: decisions whose wall-clock time fell in `[startMs, startMs + durationMs)`. */
export interface MetricsBucket extends MetricsFigures {
  readonly startMs: number;
  readonly durationMs: number;
}

interface MutableScopeCounts {
  allowed: number;
  rejected: number;
  wouldReject: number;
  degraded: number;
}

class Accumulator {
  readonly #scopes = new Map<string, MutableScopeCounts>();
  readonly #degradedByFailure = zeroRecord(STORE_FAILURES);
  readonly #decisionsBySource = zeroRecord(DECISION_SOURCES);
  readonly #boundsMicros: readonly number[];
  readonly #latencyCounts: number[];
  #sumMicros = 0;
  #count = 0;

  constructor(boundsMicros: readonly number[]) {
    this.#boundsMicros = boundsMicros;
    this.#latencyCounts = new Array<number>(boundsMicros.length + 1).fill(0);
  }

  /** Counts one outcome of a decision (admitted or not) under the scope name `name`. */
  addOutcome(isAllowed: boolean, outcome: MetricsDecision["outcomes"][number], name: string): void {
    let counts = this.#scopes.get(name);
    if (counts === undefined) {
      counts = { allowed: 0, rejected: 0, wouldReject: 0, degraded: 0 };
      this.#scopes.set(name, counts);
    }
    if (outcome.mode === "enforce") {
      if (isAllowed) counts.allowed++;
      else if (!outcome.allowed) counts.rejected++;
    } else if (outcome.allowed) {
      counts.allowed++;
    } else {
      counts.wouldReject++;
    }
    if (outcome.fallback !== undefined && outcome.fallback !== null) counts.degraded++;
  }

  /** Counts the decision itself (after its outcomes): source, failure and latency. */
  addDecision(decision: MetricsDecision, latencyMicros: number, bucketIndex: number): void {
    const failure = decision.failure ?? null;
    if (failure !== null) this.#degradedByFailure[failure]++;
    this.#decisionsBySource[decision.source ?? "store"]++;
    this.#latencyCounts[bucketIndex] = (this.#latencyCounts[bucketIndex] ?? 0) + 1;
    this.#sumMicros += latencyMicros;
    this.#count++;
  }

  figures(): MetricsFigures {
    const scopes = [...this.#scopes]
      .map(([scope, counts]) => ({ scope, ...counts }))
      .sort((a, b) => (a.scope < b.scope ? -1 : a.scope > b.scope ? 1 : 0));
    return {
      scopes,
      degradedByFailure: { ...this.#degradedByFailure },
      decisionsBySource: { ...this.#decisionsBySource },
      latency: {
        boundsMicros: this.#boundsMicros,
        counts: [...this.#latencyCounts],
        sumMicros: this.#sumMicros,
        count: this.#count,
      },
    };
  }
}

function zeroRecord<K extends string>(keys: readonly K[]): Record<K, number> {
  const record = {} as Record<K, number>;
  for (const key of keys) record[key] = 0;
  return record;
}

export interface DecisionMetricsOptions {
  /**
   * Tags decisions with their time bucket. The wall clock, because the buckets are read by people
   * on charts and merged across gateways; latency is measured by the caller on its own clock.
   * @default wallClock
   */
  readonly wallClock?: Clock;
  /** Width of a time bucket. @default 1_000 */
  readonly bucketMs?: number;
  /**
   * Most undrained time buckets kept; older ones are dropped (and counted) if the flusher stalls,
   * so a dead Redis cannot grow the process. The running totals keep everything.
   * @default 300
   */
  readonly maxPendingBuckets?: number;
  /** Most distinct scopes counted; further scopes count under `(other)`. @default 10_000 */
  readonly maxScopes?: number;
  /** Latency bucket upper bounds, ascending. @default DEFAULT_LATENCY_BOUNDS_MICROS */
  readonly latencyBoundsMicros?: readonly number[];
}

/** Per-scope counters and a latency histogram, drained as time-bucketed deltas. */
export class DecisionMetrics {
  readonly #wallClock: Clock;
  readonly #bucketMs: number;
  readonly #maxPendingBuckets: number;
  readonly #maxScopes: number;
  readonly #boundsMicros: readonly number[];
  readonly #knownScopes = new Set<string>();
  readonly #totals: Accumulator;
  /** Undrained buckets by start time, in insertion order. */
  #pending = new Map<number, Accumulator>();
  /** The bucket the last decision went to and its span, or null after a drain. */
  #current: Accumulator | null = null;
  #currentStartMs = 0;
  #currentEndMs = 0;
  #droppedBucketCount = 0;

  constructor(options: DecisionMetricsOptions = {}) {
    this.#wallClock = options.wallClock ?? wallClock;
    this.#bucketMs = options.bucketMs ?? 1_000;
    this.#maxPendingBuckets = options.maxPendingBuckets ?? 300;
    this.#maxScopes = options.maxScopes ?? 10_000;
    this.#boundsMicros = options.latencyBoundsMicros ?? DEFAULT_LATENCY_BOUNDS_MICROS;
    if (!(Number.isInteger(this.#bucketMs) && this.#bucketMs >= 1)) {
      throw new RangeError(`bucketMs must be a whole number >= 1, got ${this.#bucketMs}`);
    }
    if (!(Number.isInteger(this.#maxPendingBuckets) && this.#maxPendingBuckets >= 1)) {
      throw new RangeError(`maxPendingBuckets must be a whole number >= 1`);
    }
    if (!(Number.isInteger(this.#maxScopes) && this.#maxScopes >= 1)) {
      throw new RangeError(`maxScopes must be a whole number >= 1`);
    }
    const isAscending = this.#boundsMicros.every(
      (bound, index) => bound > 0 && (index === 0 || bound > (this.#boundsMicros[index - 1] ?? 0)),
    );
    if (!isAscending || this.#boundsMicros.length === 0) {
      throw new RangeError("latencyBoundsMicros must be positive and strictly ascending");
    }
    this.#totals = new Accumulator(this.#boundsMicros);
  }

  /** Distinct scopes counted so far (at most `maxScopes`, plus `(other)`). */
  get scopeCount(): number {
    return this.#knownScopes.size;
  }

  /** Time buckets dropped undrained because `maxPendingBuckets` was reached. */
  get droppedBucketCount(): number {
    return this.#droppedBucketCount;
  }

  /**
   * Counts one decision that took `latencyMicros` to make, in the time bucket of `wallNowMs` (the
   * wall clock's reading, when the caller has read it already).
   */
  record(decision: MetricsDecision, latencyMicros: number, wallNowMs?: number): void {
    const latency = latencyMicros >= 0 && Number.isFinite(latencyMicros) ? latencyMicros : 0;
    const bucketIndex = this.#latencyBucketOf(latency);
    const totals = this.#totals;
    const current = this.#currentBucket(wallNowMs ?? this.#wallClock.nowMs());
    // Plain loops over plain counters: this runs for every request.
    const { outcomes, allowed } = decision;
    for (let index = 0; index < outcomes.length; index++) {
      const outcome = outcomes[index];
      if (outcome === undefined) continue;
      const name = this.#scopeName(outcome.scope);
      totals.addOutcome(allowed, outcome, name);
      current.addOutcome(allowed, outcome, name);
    }
    totals.addDecision(decision, latency, bucketIndex);
    current.addDecision(decision, latency, bucketIndex);
  }

  /**
   * The time buckets recorded since the last drain, oldest first, and forgets them: each call
   * returns deltas, so a flusher can add them to shared counters (HINCRBY) without double
   * counting. A bucket may come back again in a later drain if decisions kept arriving in it;
   * its figures are then the new deltas only.
   */
  drain(): readonly MetricsBucket[] {
    const drained = [...this.#pending]
      .sort(([a], [b]) => a - b)
      .map(([startMs, accumulator]) => ({
        startMs,
        durationMs: this.#bucketMs,
        ...accumulator.figures(),
      }));
    this.#pending = new Map();
    this.#current = null;
    return drained;
  }

  /** Everything since the metrics were made, for Prometheus. Draining does not affect it. */
  totals(): MetricsFigures {
    return this.#totals.figures();
  }

  #scopeName(scope: string): string {
    if (this.#knownScopes.has(scope)) return scope;
    if (this.#knownScopes.size < this.#maxScopes) {
      this.#knownScopes.add(scope);
      return scope;
    }
    this.#knownScopes.add(OTHER_SCOPE);
    return OTHER_SCOPE;
  }

  #latencyBucketOf(latencyMicros: number): number {
    let index = 0;
    while (index < this.#boundsMicros.length && latencyMicros > (this.#boundsMicros[index] ?? 0)) {
      index++;
    }
    return index;
  }

  #currentBucket(nowMs: number): Accumulator {
    // The bucket of the previous decision, most often this one's too: two comparisons, no lookup.
    const current = this.#current;
    if (current !== null && nowMs >= this.#currentStartMs && nowMs < this.#currentEndMs) {
      return current;
    }
    const startMs = nowMs - (((nowMs % this.#bucketMs) + this.#bucketMs) % this.#bucketMs);
    const bucket = this.#bucketAt(startMs);
    this.#current = bucket;
    this.#currentStartMs = startMs;
    this.#currentEndMs = startMs + this.#bucketMs;
    return bucket;
  }

  #bucketAt(startMs: number): Accumulator {
    let bucket = this.#pending.get(startMs);
    if (bucket !== undefined) return bucket;
    if (this.#pending.size >= this.#maxPendingBuckets) {
      let oldest: number | undefined;
      for (const start of this.#pending.keys()) {
        if (oldest === undefined || start < oldest) oldest = start;
      }
      if (oldest !== undefined) this.#pending.delete(oldest);
      this.#droppedBucketCount++;
    }
    bucket = new Accumulator(this.#boundsMicros);
    this.#pending.set(startMs, bucket);
    return bucket;
  }
}
