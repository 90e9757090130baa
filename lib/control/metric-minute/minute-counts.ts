/**
 * The per-scope, per-minute counts that charts and alerts read: one row per scope and minute, as
 * the worker rolls the enforcers' counters up into Postgres (issue 7). Several rows for the same
 * scope and minute (one per enforcer, say) simply add up.
 *
 * What a row must mean, for rates to be right:
 * - `allowed`: requests this scope admitted (for a dry-run scope: would have admitted);
 * - `rejected`: requests this scope rejected while enforcing;
 * - `wouldReject`: requests a dry-run scope would have rejected (they were admitted).
 * So the requests a scope evaluated are `allowed + rejected + wouldReject`, each counted once.
 */

/** One minute of one scope's counters. */
export interface ScopeMinuteCount {
  /** A scope in the policy grammar: `tier:pro`, `customer:C/endpoint:E`, `candidate:ID`, ... */
  readonly scope: string;
  /** Start of the minute, in milliseconds since the epoch. */
  readonly minuteStartMs: number;
  readonly allowed: number;
  readonly rejected: number;
  /** Only dry-run scopes have it. @default 0 */
  readonly wouldReject?: number;
}

/** Length of the rows' time unit. */
export const MINUTE_MS = 60_000;

/** Sums over a span of minutes. */
export interface CountTotals {
  /** Requests evaluated: `allowed + rejected + wouldReject`. */
  requests: number;
  rejected: number;
  wouldReject: number;
}

export function emptyTotals(): CountTotals {
  return { requests: 0, rejected: 0, wouldReject: 0 };
}

/**
 * A row a chart or alert may use: finite, non-negative counts at a finite time. Anything else (a
 * NaN from a bad rollup, a negative count) is left out rather than poisoning every sum it touches.
 */
export function isUsableCount(row: ScopeMinuteCount): boolean {
  const wouldReject = row.wouldReject ?? 0;
  return (
    Number.isFinite(row.minuteStartMs) &&
    isCount(row.allowed) &&
    isCount(row.rejected) &&
    isCount(wouldReject)
  );
}

function isCount(value: number): boolean {
  return Number.isFinite(value) && value >= 0;
}

/** Adds a usable row into `totals` (mutating it, for use in tight loops). */
export function addRow(totals: CountTotals, row: ScopeMinuteCount): void {
  const wouldReject = row.wouldReject ?? 0;
  totals.requests += row.allowed + row.rejected + wouldReject;
  totals.rejected += row.rejected;
  totals.wouldReject += wouldReject;
}

/** Usable rows grouped by scope, scopes in code-unit order so every caller sees the same order. */
export function groupByScope(rows: readonly ScopeMinuteCount[]): Map<string, ScopeMinuteCount[]> {
  const groups = new Map<string, ScopeMinuteCount[]>();
  for (const row of rows) {
    if (!isUsableCount(row)) continue;
    const group = groups.get(row.scope);
    if (group === undefined) groups.set(row.scope, [row]);
    else group.push(row);
  }
  return new Map([...groups.entries()].sort(([a], [b]) => compareCodeUnits(a, b)));
}

/** Sum of the rows whose minute starts in `[fromMs, toMs)`. */
export function sumRange(
  rows: readonly ScopeMinuteCount[],
  fromMs: number,
  toMs: number,
): CountTotals {
  const totals = emptyTotals();
  for (const row of rows) {
    if (row.minuteStartMs >= fromMs && row.minuteStartMs < toMs && isUsableCount(row)) {
      addRow(totals, row);
    }
  }
  return totals;
}

/** Deterministic string order that does not depend on the runtime's locale. */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
