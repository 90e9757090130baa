/**
 * The comparisons the dry-run pages show, read once per page: for each candidate its lifecycle
 * (audit log), the per-minute counts of it and of its target over the selected range (history and
 * live minutes), and `compareCandidate` over them. The candidate page draws its chart from the
 * same rows over the same range, and hands the same comparison to the promote dialog.
 */
import type { CandidateRecord } from "../candidate/candidate-record";
import {
  type CandidateLifecycle,
  readCandidateLifecycle,
} from "../candidate/read-candidate-lifecycle";
import type { ScopeMinuteCount } from "../metric-minute/minute-counts";
import {
  type CandidateComparison,
  type CompareCandidateOptions,
  compareCandidate,
} from "./compare-candidate";
import { readScopeCounts, type ScopeCountsDeps } from "./read-scope-counts";

export interface CandidateComparisonRead {
  readonly candidate: CandidateRecord;
  readonly candidateScope: string;
  readonly lifecycle: CandidateLifecycle;
  readonly comparison: CandidateComparison;
}

export interface CandidateComparisons {
  /** In the order the candidates were given. */
  readonly items: readonly CandidateComparisonRead[];
  /** Every row read, for charts. */
  readonly rows: readonly ScopeMinuteCount[];
  /** False when Redis could not be read: the last minutes are missing on both sides alike. */
  readonly isLive: boolean;
}

/** The scope a candidate is counted under. */
export function candidateScopeOf(id: string): string {
  return `candidate:${id}`;
}

export async function readCandidateComparisons(
  options: {
    readonly candidates: readonly CandidateRecord[];
    /** The selected range, whole minutes, the current one included (still counting). */
    readonly range: CompareCandidateOptions["range"];
    /** The wall clock now, ms. */
    readonly nowMs: number;
  },
  deps: ScopeCountsDeps,
): Promise<CandidateComparisons> {
  const { candidates, range, nowMs } = options;
  const [lifecycles, counts] = await Promise.all([
    Promise.all(candidates.map((candidate) => readCandidateLifecycle(candidate, deps))),
    readScopeCounts(
      {
        scopes: candidates.flatMap((candidate) => [
          candidate.target,
          candidateScopeOf(candidate.id),
        ]),
        fromMs: range.startMs,
        toMs: range.endMs,
        nowMs,
      },
      deps,
    ),
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
        range,
        nowMs,
      }),
    };
  });
  return { items, rows: counts.rows, isLive: counts.isLive };
}
