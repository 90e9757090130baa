/**
 * What the enforcer decided, aggregated in process for a flusher (to Redis, every second or so) and
 * for a Prometheus endpoint:
 *
 * - {@link DecisionMetrics}: per-scope counters and a decision-latency histogram, in time buckets
 *   drained as deltas, plus running totals for Prometheus. Cardinality is bounded by the number of
 *   scopes (which come from the policy), never by keys or subjects: nothing here takes a subject.
 * - {@link RecentRejections}: a bounded, expiring record of each customer's recent rejections, for
 *   the console.
 * - {@link renderPrometheus}: the text exposition format of the totals.
 */
import type { Clock } from "../limiter/clock";
import { monotonicClock } from "../limiter/clock";
import type { LimitMode } from "../limiter/types";
import { BoundedLru } from "./lru";
import {
  DECISION_SOURCES,
  type DecisionSource,
  STORE_FAILURES,
  type StoreFailure,
  type StoreFailurePolicy,
} from "./types";

/** The wall clock, for timestamps people read (time buckets, rejection times). */
export const wallClock: Clock = { nowMs: () => Date.now() };

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
 * per-minute rows mean, `lib/console/minute-counts.ts`), and a dry-run scope reads "would reject
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

  add(
    decision: MetricsDecision,
    scopeNames: readonly string[],
    latencyMicros: number,
    bucketIndex: number,
  ): void {
    decision.outcomes.forEach((outcome, index) => {
      const name = scopeNames[index] ?? OTHER_SCOPE;
      let counts = this.#scopes.get(name);
      if (counts === undefined) {
        counts = { allowed: 0, rejected: 0, wouldReject: 0, degraded: 0 };
        this.#scopes.set(name, counts);
      }
      if (outcome.mode === "enforce") {
        if (decision.allowed) counts.allowed++;
        else if (!outcome.allowed) counts.rejected++;
      } else if (outcome.allowed) {
        counts.allowed++;
      } else {
        counts.wouldReject++;
      }
      if (outcome.fallback !== undefined && outcome.fallback !== null) counts.degraded++;
    });
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

  /** Counts one decision that took `latencyMicros` to make. */
  record(decision: MetricsDecision, latencyMicros: number): void {
    const latency = latencyMicros >= 0 && Number.isFinite(latencyMicros) ? latencyMicros : 0;
    const scopeNames = decision.outcomes.map((outcome) => this.#scopeName(outcome.scope));
    const bucketIndex = this.#latencyBucketOf(latency);
    this.#totals.add(decision, scopeNames, latency, bucketIndex);
    this.#currentBucket().add(decision, scopeNames, latency, bucketIndex);
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

  #currentBucket(): Accumulator {
    const nowMs = this.#wallClock.nowMs();
    const startMs = nowMs - (((nowMs % this.#bucketMs) + this.#bucketMs) % this.#bucketMs);
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

/** One rejection of a customer's request, as the console lists it. */
export interface RecentRejection {
  /** Wall-clock time, epoch milliseconds. */
  readonly atMs: number;
  readonly scope: string;
  /** The endpoint class, or null when the gateway did not know it. */
  readonly endpointClass: string | null;
}

export interface CustomerRejection extends RecentRejection {
  readonly customerId: string;
}

interface StoredRejection extends RecentRejection {
  /** On the monotonic clock. */
  readonly expiresAtMs: number;
}

export interface RecentRejectionsOptions {
  /** Most customers remembered; the least recently rejected is forgotten. @default 10_000 */
  readonly maxCustomers?: number;
  /** Most rejections kept per customer; the oldest go first. @default 20 */
  readonly maxPerCustomer?: number;
  /** How long a rejection is listed. @default 900_000 (15 minutes) */
  readonly ttlMs?: number;
  /**
   * Most rejections waiting for `drain`; beyond it the oldest are dropped (and counted), so a
   * stalled flusher cannot grow the process.
   * @default 10_000
   */
  readonly maxPending?: number;
  /** Measures the expiry. @default monotonicClock */
  readonly clock?: Clock;
  /** Stamps `atMs`. @default wallClock */
  readonly wallClock?: Clock;
}

/**
 * A bounded, expiring record of each customer's recent rejections (customers only: anonymous
 * traffic is keyed by address, which the console does not list). Bounded three ways: customers
 * (LRU), rejections per customer, and rejections waiting for the flusher.
 */
export class RecentRejections {
  readonly #byCustomer: BoundedLru<string, StoredRejection[]>;
  readonly #maxPerCustomer: number;
  readonly #ttlMs: number;
  readonly #maxPending: number;
  readonly #clock: Clock;
  readonly #wallClock: Clock;
  /** A ring: `#pendingStart` is the oldest; `#pendingCount` entries follow it. */
  readonly #pending: (CustomerRejection | undefined)[];
  #pendingStart = 0;
  #pendingCount = 0;
  #droppedCount = 0;

  constructor(options: RecentRejectionsOptions = {}) {
    this.#byCustomer = new BoundedLru(options.maxCustomers ?? 10_000);
    this.#maxPerCustomer = options.maxPerCustomer ?? 20;
    this.#ttlMs = options.ttlMs ?? 900_000;
    this.#maxPending = options.maxPending ?? 10_000;
    this.#clock = options.clock ?? monotonicClock;
    this.#wallClock = options.wallClock ?? wallClock;
    if (!(Number.isInteger(this.#maxPerCustomer) && this.#maxPerCustomer >= 1)) {
      throw new RangeError(`maxPerCustomer must be a whole number >= 1`);
    }
    if (!(this.#ttlMs > 0)) throw new RangeError(`ttlMs must be > 0, got ${this.#ttlMs}`);
    if (!(Number.isInteger(this.#maxPending) && this.#maxPending >= 1)) {
      throw new RangeError(`maxPending must be a whole number >= 1`);
    }
    this.#pending = new Array<CustomerRejection | undefined>(this.#maxPending);
  }

  get customerCount(): number {
    return this.#byCustomer.size;
  }

  /** Rejections dropped before a drain because `maxPending` was reached. */
  get droppedCount(): number {
    return this.#droppedCount;
  }

  /** Records that `customerId`'s request was rejected by `scope`. */
  record(customerId: string, scope: string, endpointClass: string | null): void {
    const rejection: RecentRejection = { atMs: this.#wallClock.nowMs(), scope, endpointClass };
    const stored: StoredRejection = {
      ...rejection,
      expiresAtMs: this.#clock.nowMs() + this.#ttlMs,
    };
    const list = this.#byCustomer.get(customerId);
    if (list === undefined) {
      this.#byCustomer.set(customerId, [stored]);
    } else {
      list.push(stored);
      if (list.length > this.#maxPerCustomer) list.shift();
    }
    this.#enqueue({ customerId, ...rejection });
  }

  /** The customer's unexpired rejections, newest first. */
  recent(customerId: string): readonly RecentRejection[] {
    const list = this.#byCustomer.peek(customerId);
    if (list === undefined) return [];
    const nowMs = this.#clock.nowMs();
    const live = list.filter((rejection) => rejection.expiresAtMs > nowMs);
    if (live.length === 0) {
      this.#byCustomer.delete(customerId);
      return [];
    }
    if (live.length !== list.length) this.#byCustomer.set(customerId, live);
    return live.map(({ atMs, scope, endpointClass }) => ({ atMs, scope, endpointClass })).reverse();
  }

  /** Rejections recorded since the last drain, oldest first; forgets them. */
  drain(): readonly CustomerRejection[] {
    const drained: CustomerRejection[] = [];
    for (let offset = 0; offset < this.#pendingCount; offset++) {
      const index = (this.#pendingStart + offset) % this.#maxPending;
      const rejection = this.#pending[index];
      if (rejection !== undefined) drained.push(rejection);
      this.#pending[index] = undefined;
    }
    this.#pendingStart = 0;
    this.#pendingCount = 0;
    return drained;
  }

  #enqueue(rejection: CustomerRejection): void {
    if (this.#pendingCount === this.#maxPending) {
      this.#pending[this.#pendingStart] = rejection;
      this.#pendingStart = (this.#pendingStart + 1) % this.#maxPending;
      this.#droppedCount++;
      return;
    }
    this.#pending[(this.#pendingStart + this.#pendingCount) % this.#maxPending] = rejection;
    this.#pendingCount++;
  }
}

export interface RenderPrometheusOptions {
  /** Metric name prefix. @default "limitplane" */
  readonly prefix?: string;
  /** Labels added to every series, e.g. `{ gateway: "gw-1" }`. @default {} */
  readonly constantLabels?: Readonly<Record<string, string>>;
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** A label value in the text exposition format: `\`, `"` and newline escaped. */
export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** HELP text: `\` and newline escaped. */
function escapeHelp(text: string): string {
  return text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

function formatLabels(labels: readonly (readonly [string, string])[]): string {
  if (labels.length === 0) return "";
  return `{${labels.map(([name, value]) => `${name}="${escapeLabelValue(value)}"`).join(",")}}`;
}

/**
 * The Prometheus text exposition format (version 0.0.4) of `figures` (usually
 * `metrics.totals()`): counters per scope and outcome, degraded decisions per scope and per store
 * failure, decisions per source, and the latency histogram in seconds with cumulative `_bucket`
 * series, `_sum` and `_count`. Series are in a stable order. Ends with a newline.
 */
export function renderPrometheus(
  figures: MetricsFigures,
  options: RenderPrometheusOptions = {},
): string {
  const prefix = options.prefix ?? "limitplane";
  if (!METRIC_NAME.test(prefix)) throw new RangeError(`invalid metric name prefix: ${prefix}`);
  const constant = Object.entries(options.constantLabels ?? {});
  for (const [name] of constant) {
    if (!LABEL_NAME.test(name) || name.startsWith("__")) {
      throw new RangeError(`invalid label name: ${name}`);
    }
  }
  const lines: string[] = [];
  const family = (name: string, type: "counter" | "histogram", help: string) => {
    lines.push(`# HELP ${prefix}_${name} ${escapeHelp(help)}`, `# TYPE ${prefix}_${name} ${type}`);
  };
  const sample = (name: string, labels: readonly (readonly [string, string])[], value: number) => {
    lines.push(`${prefix}_${name}${formatLabels([...constant, ...labels])} ${formatValue(value)}`);
  };

  family(
    "decisions_total",
    "counter",
    "Requests per scope: admitted (allowed; for a dry-run scope, would have admitted), rejected by the scope, or would have been rejected by a dry-run scope (would_reject).",
  );
  for (const counts of figures.scopes) {
    sample(
      "decisions_total",
      [
        ["scope", counts.scope],
        ["outcome", "allowed"],
      ],
      counts.allowed,
    );
    sample(
      "decisions_total",
      [
        ["scope", counts.scope],
        ["outcome", "rejected"],
      ],
      counts.rejected,
    );
    sample(
      "decisions_total",
      [
        ["scope", counts.scope],
        ["outcome", "would_reject"],
      ],
      counts.wouldReject,
    );
  }

  family(
    "degraded_decisions_total",
    "counter",
    "Limits decided by their failure policy (open, closed, local) because the store failed, per scope.",
  );
  for (const counts of figures.scopes) {
    sample("degraded_decisions_total", [["scope", counts.scope]], counts.degraded);
  }

  family("store_failures_total", "counter", "Degraded decisions by the store failure behind them.");
  for (const failure of STORE_FAILURES) {
    sample("store_failures_total", [["failure", failure]], figures.degradedByFailure[failure]);
  }

  family("decision_sources_total", "counter", "Decisions by who answered.");
  for (const source of DECISION_SOURCES) {
    sample("decision_sources_total", [["source", source]], figures.decisionsBySource[source]);
  }

  const { latency } = figures;
  family("decision_latency_seconds", "histogram", "Time to decide one request.");
  let cumulative = 0;
  latency.boundsMicros.forEach((boundMicros, index) => {
    cumulative += latency.counts[index] ?? 0;
    sample("decision_latency_seconds_bucket", [["le", formatValue(boundMicros / 1e6)]], cumulative);
  });
  sample("decision_latency_seconds_bucket", [["le", "+Inf"]], latency.count);
  sample("decision_latency_seconds_sum", [], latency.sumMicros / 1e6);
  sample("decision_latency_seconds_count", [], latency.count);

  return `${lines.join("\n")}\n`;
}

/** A sample value: shortest round-trip decimal, `+Inf`/`-Inf`/`NaN` as the format spells them. */
function formatValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Number.POSITIVE_INFINITY) return "+Inf";
  if (value === Number.NEGATIVE_INFINITY) return "-Inf";
  return String(value);
}
