/**
 * What a dry-run candidate would have blocked next to what the rule it targets did block, over one
 * span that both sides share. Pure: per-minute counts and the candidate's lifecycle in, the span
 * and both totals out. Every place that states a comparison (the candidate page's totals and
 * chart summary, the promote dialog, the list of candidates) reads it from here.
 *
 * The span is the selected range cut to the current candidate's life:
 * - it starts at the later of the range's start and the first whole minute after the candidate's
 *   last lifecycle event (its creation, or its last change of limit or target: counts from before
 *   a change describe a candidate that no longer exists, and a change of target even compares
 *   against another rule);
 * - it ends where the range ends (the end of the current minute, still counting, when the range
 *   includes it).
 * The counts are per minute, so the minute the candidate was created or changed in is left out on
 * both sides: the candidate counted only part of it, while the rule in force counted all of it,
 * and including it would compare, say, 12 seconds against 60. Both sides sum exactly the minutes
 * in `[startMs, endMs)`.
 *
 * Zero traffic is a status, never a rate of 0% or NaN: `not-started` before the first whole minute
 * begins, `no-traffic` when neither scope evaluated a request in the span.
 */
import {
  addRow,
  emptyTotals,
  isUsableCount,
  MINUTE_MS,
  type ScopeMinuteCount,
} from "../metric-minute/minute-counts";

/** When the candidate came into being and each time it was changed, ms since the epoch. */
export interface CandidateLifecycleTimes {
  readonly createdAtMs: number;
  /** Changes of its limit or target, in any order. */
  readonly changedAtMs: readonly number[];
}

export interface CompareCandidateOptions {
  /** `candidate:<id>`. */
  readonly candidateScope: string;
  /** The scope of the rule it would replace, e.g. `tier:pro`. */
  readonly targetScope: string;
  readonly lifecycle: CandidateLifecycleTimes;
  /** The selected range, whole minutes: `startMs` inclusive, `endMs` exclusive. */
  readonly range: { readonly startMs: number; readonly endMs: number; readonly label: string };
  /** The wall clock now, ms: how long the span has run so far. */
  readonly nowMs: number;
}

/** What bounds the span's start: the range, or the candidate's creation or last change. */
export type ComparedSpanBound = "range" | "created" | "changed";

export interface ComparedSpan {
  /** Inclusive, a minute's start. */
  readonly startMs: number;
  /** Exclusive, a minute's start; equal to `startMs` while no minute has begun. */
  readonly endMs: number;
  readonly bound: ComparedSpanBound;
  /** The creation or last change: what the candidate's side of the bound is. */
  readonly eventAtMs: number;
  /** The range's own words, e.g. "Last 15 minutes". */
  readonly rangeLabel: string;
  /** How much of the span has passed at `nowMs`, ms (0 before it starts). */
  readonly elapsedMs: number;
}

/** One side of the comparison over the span. */
export interface SideTotals {
  /** Requests the scope evaluated. */
  readonly requests: number;
  /** Rejected (the rule in force) or would-reject (the candidate). */
  readonly blocked: number;
  /** `blocked / requests`; `null` with no requests. */
  readonly rate: number | null;
}

export type CandidateComparison =
  | {
      /** The first whole minute after the creation or change has not begun. */
      readonly status: "not-started";
      readonly span: ComparedSpan;
    }
  | {
      readonly status: "no-traffic" | "counted";
      readonly span: ComparedSpan;
      /** The candidate: requests it saw and how many it would have rejected. */
      readonly candidate: SideTotals;
      /** The rule in force at `targetScope`: requests it evaluated and how many it rejected. */
      readonly target: SideTotals;
    };

/** The start of the first minute that begins at or after `atMs`. */
export function firstWholeMinuteAfter(atMs: number): number {
  return Math.ceil(atMs / MINUTE_MS) * MINUTE_MS;
}

/** The candidate's last lifecycle event: its creation or its latest change. */
export function lastLifecycleEvent(lifecycle: CandidateLifecycleTimes): {
  readonly atMs: number;
  readonly kind: "created" | "changed";
} {
  const changes = lifecycle.changedAtMs.filter(
    (atMs) => Number.isFinite(atMs) && atMs > lifecycle.createdAtMs,
  );
  if (changes.length === 0) return { atMs: lifecycle.createdAtMs, kind: "created" };
  return { atMs: Math.max(...changes), kind: "changed" };
}

/**
 * The span both sides of the comparison cover.
 * @throws RangeError when a time is not finite or the range is not whole minutes with
 *   `endMs > startMs`.
 */
export function comparedSpan(
  options: Omit<CompareCandidateOptions, "candidateScope" | "targetScope">,
): ComparedSpan {
  const { range, lifecycle, nowMs } = options;
  if (![range.startMs, range.endMs, nowMs, lifecycle.createdAtMs].every(Number.isFinite)) {
    throw new RangeError("range, nowMs and createdAtMs must be finite numbers");
  }
  if (
    range.startMs % MINUTE_MS !== 0 ||
    range.endMs % MINUTE_MS !== 0 ||
    !(range.endMs > range.startMs)
  ) {
    throw new RangeError("the range must be whole minutes with endMs after startMs");
  }
  const event = lastLifecycleEvent(lifecycle);
  const lifeStartMs = firstWholeMinuteAfter(event.atMs);
  const isRangeBound = range.startMs >= lifeStartMs;
  const startMs = Math.min(isRangeBound ? range.startMs : lifeStartMs, range.endMs);
  return {
    startMs,
    endMs: Math.max(startMs, range.endMs),
    bound: isRangeBound ? "range" : event.kind,
    eventAtMs: event.atMs,
    rangeLabel: range.label,
    elapsedMs: Math.max(0, Math.min(nowMs, range.endMs) - startMs),
  };
}

function side(blocked: number, requests: number): SideTotals {
  return { requests, blocked, rate: requests > 0 ? blocked / requests : null };
}

/**
 * Both totals over the span: the candidate's would-rejects and requests, and the target rule's
 * rejections and requests, summed over the same minutes. Rows of other scopes, rows outside the
 * span and unusable rows (NaN or negative counts) are left out.
 */
export function compareCandidate(
  rows: readonly ScopeMinuteCount[],
  options: CompareCandidateOptions,
): CandidateComparison {
  const span = comparedSpan(options);
  if (span.startMs >= span.endMs || options.nowMs < span.startMs) {
    return { status: "not-started", span };
  }
  const candidate = emptyTotals();
  const target = emptyTotals();
  for (const row of rows) {
    if (row.minuteStartMs < span.startMs || row.minuteStartMs >= span.endMs) continue;
    if (!isUsableCount(row)) continue;
    if (row.scope === options.candidateScope) addRow(candidate, row);
    else if (row.scope === options.targetScope) addRow(target, row);
  }
  return {
    status: candidate.requests === 0 && target.requests === 0 ? "no-traffic" : "counted",
    span,
    candidate: side(candidate.wouldReject, candidate.requests),
    target: side(target.rejected, target.requests),
  };
}
