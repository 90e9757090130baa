import type { ReactNode } from "react";
import { formatDurationMs, formatNumber, formatPercent } from "@/lib/console/format";
import type {
  CandidateComparison,
  ComparedSpan,
  SideTotals,
} from "@/lib/control/dry-run/compare-candidate";
import { ClockTime } from "./clock-time";

/**
 * The words for a comparison's span and for the comparison itself, shared by the candidate page's
 * totals, its chart, the promote dialog and the list of candidates, so each states the same span
 * in the same words (`lib/control/dry-run/compare-candidate.ts` decides the span).
 */

const HALF_DAY_MS = 12 * 60 * 60 * 1000;

/** How long the span has run: whole minutes ("12 min", "2 h 5 min"), seconds under a minute. */
export function elapsedWords(elapsedMs: number): string {
  if (elapsedMs < 60_000) return formatDurationMs(Math.floor(elapsedMs / 1000) * 1000);
  return formatDurationMs(Math.floor(elapsedMs / 60_000) * 60_000);
}

function isLong(span: ComparedSpan): boolean {
  return span.elapsedMs > HALF_DAY_MS;
}

/**
 * "over the last 15 minutes, since 14:51", "over the 12 min since 14:04, the first whole minute
 * after it was created at 14:03:20", or "... after it was last changed at 14:10:05".
 */
export function ComparedSpanWords({
  span,
  capitalized = false,
}: {
  span: ComparedSpan;
  /** @default false */
  capitalized?: boolean;
}) {
  const over = capitalized ? "Over" : "over";
  const from = <ClockTime atMs={span.startMs} withWeekday={isLong(span)} />;
  if (span.bound === "range") {
    return (
      <>
        {over} the {span.rangeLabel.toLowerCase()}, since {from}
      </>
    );
  }
  return (
    <>
      {over} the {elapsedWords(span.elapsedMs)} since {from}, the first whole minute after it was{" "}
      {span.bound === "created" ? "created" : "last changed"} at{" "}
      <ClockTime atMs={span.eventAtMs} withSeconds withWeekday={isLong(span)} />
    </>
  );
}

/**
 * What each side's request count is. The two differ by design (packages/enforcer
 * decision-metrics.ts): a dry-run candidate never rejects, so it counts every request it saw; an
 * enforced limit counts a request it rejected, or one every limit admitted, so a request another
 * limit refused while this one would have let it through is in the candidate's count only.
 */
export const COUNTED_WORDS = { candidate: "it saw", target: "it decided" } as const;

/** "330 of 987 requests it saw (33%)"; the caller says what no requests means. */
export function sideWords(totals: SideTotals, side: keyof typeof COUNTED_WORDS): string {
  return `${formatNumber(totals.blocked)} of ${formatNumber(totals.requests)} requests ${COUNTED_WORDS[side]} (${formatPercent(totals.rate)})`;
}

/**
 * Why the two totals are out of different numbers of requests, in words; null when they count
 * the same number (or nothing is counted yet). Every total shown beside the other says this, so
 * "1,432 of 3,984" against "746 of 3,760" is never left unexplained.
 */
export function countsDifferenceWords(
  comparison: CandidateComparison,
  targetScope: string,
): string | null {
  if (comparison.status !== "counted") return null;
  const seen = comparison.candidate.requests;
  const decided = comparison.target.requests;
  if (seen === decided) return null;
  const rule = `The candidate counts every request it saw (${formatNumber(seen)}), since it never rejects; ${targetScope} counts only the requests it rejected or that got through every limit (${formatNumber(decided)})`;
  if (seen > decided) {
    const refusedElsewhere = seen - decided;
    return `${rule}: the other ${formatNumber(refusedElsewhere)} ${refusedElsewhere === 1 ? "was" : "were"} refused by another limit (a ceiling or an endpoint class) that ${targetScope} would have let through.`;
  }
  return `${rule}.`;
}

/** Why there is nothing to compare yet, for a comparison that has not started. */
export function NotStartedWords({ span }: { span: ComparedSpan }) {
  return (
    <>
      It was {span.bound === "changed" ? "last changed" : "created"} at{" "}
      <ClockTime atMs={span.eventAtMs} withSeconds />, and its counts start with the first whole
      minute after, at <ClockTime atMs={span.startMs} />: nothing is counted yet
    </>
  );
}

/**
 * The comparison as one sentence, for the promote dialog and the list: the span, then what the
 * candidate would have blocked and what the rule in force blocked over it.
 */
export function ComparisonSentence({
  comparison,
  targetScope,
}: {
  comparison: CandidateComparison;
  targetScope: string;
}): ReactNode {
  if (comparison.status === "not-started") {
    return (
      <>
        <NotStartedWords span={comparison.span} />, so there is no evidence yet of what it would
        block.
      </>
    );
  }
  const span = <ComparedSpanWords span={comparison.span} capitalized />;
  if (comparison.status === "no-traffic") {
    return (
      <>
        {span}: neither it nor <code>{targetScope}</code> saw a request, so there is no evidence yet
        of what it would block.
      </>
    );
  }
  const difference = countsDifferenceWords(comparison, targetScope);
  return (
    <>
      {span}:{" "}
      {comparison.candidate.requests === 0
        ? "it saw no request"
        : `it would have blocked ${sideWords(comparison.candidate, "candidate")}`}
      ; <code>{targetScope}</code>{" "}
      {comparison.target.requests === 0
        ? "evaluated no request"
        : `blocked ${sideWords(comparison.target, "target")}`}
      .{difference === null ? null : ` ${difference}`}
    </>
  );
}
