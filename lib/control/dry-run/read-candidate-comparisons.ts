/**
 * The comparisons the dry-run pages show, read once per page: for each candidate its lifecycle
 * (audit log), the per-minute counts of it and of its target over the selected range (history and
 * live minutes), and `compareCandidate` over them. The candidate page draws its chart from the
 * same rows and window, and hands the same comparison to the promote dialog.
 */
import { type ChartRange, type ChartWindow, chartWindow } from "@/lib/console/chart-series";
import type { ScopeMinuteCount } from "@/lib/console/minute-counts";
import type { CandidateRecord } from "../candidate/candidate-record";
import {
  type CandidateLifecycle,
  readCandidateLifecycle,
} from "../candidate/read-candidate-lifecycle";
import { type CandidateComparison, compareCandidate } from "./compare-candidate";
import { readScopeCounts } from "./read-scope-counts";

export interface CandidateComparisonRead {
  readonly candidate: CandidateRecord;
  readonly candidateScope: string;
  readonly lifecycle: CandidateLifecycle;
  readonly comparison: CandidateComparison;
}

export interface CandidateComparisons {
  /** In the order the candidates were given. */
  readonly items: readonly CandidateComparisonRead[];
  /** The range's window, the current minute included (still counting). */
  readonly window: ChartWindow;
  /** Every row read, for charts. */
  readonly rows: readonly ScopeMinuteCount[];
  /** False when Redis could not be read: the last minutes are missing on both sides alike. */
  readonly isLive: boolean;
}

/** The scope a candidate is counted under. */
export function candidateScopeOf(id: string): string {
  return `candidate:${id}`;
}

export async function readCandidateComparisons(options: {
  readonly candidates: readonly CandidateRecord[];
  readonly range: ChartRange;
  /** The wall clock now, ms. */
  readonly nowMs: number;
}): Promise<CandidateComparisons> {
  const { candidates, range, nowMs } = options;
  const window = chartWindow(range, { nowMs, includeCurrentBucket: true });
  const [lifecycles, counts] = await Promise.all([
    Promise.all(candidates.map((candidate) => readCandidateLifecycle(candidate))),
    readScopeCounts({
      scopes: candidates.flatMap((candidate) => [candidate.target, candidateScopeOf(candidate.id)]),
      fromMs: window.startMs,
      toMs: window.endMs,
      nowMs,
    }),
  ]);
  const items = candidates.map((candidate, index): CandidateComparisonRead => {
    const lifecycle = lifecycles[index];
    if (lifecycle === undefined) throw new Error("a lifecycle is read for every candidate");
    const candidateScope = candidateScopeOf(candidate.id);
    return {
      candidate,
      candidateScope,
      lifecycle,
      comparison: compareCandidate(counts.rows, {
        candidateScope,
        targetScope: candidate.target,
        lifecycle,
        range: { startMs: window.startMs, endMs: window.endMs, label: range.label },
        nowMs,
      }),
    };
  });
  return { items, window, rows: counts.rows, isLive: counts.isLive };
}
