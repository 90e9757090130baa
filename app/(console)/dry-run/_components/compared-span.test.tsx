import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import type { CandidateComparison } from "@/lib/control/dry-run/compare-candidate";
import { ComparisonSentence, countsDifferenceWords } from "./compared-span";

const SPAN = {
  startMs: Date.UTC(2026, 0, 15, 10, 0),
  endMs: Date.UTC(2026, 0, 15, 10, 15),
  bound: "range",
  eventAtMs: Date.UTC(2026, 0, 15, 9, 0),
  rangeLabel: "Last 15 minutes",
  elapsedMs: 15 * 60_000,
} as const;

function counted(seen: number, wouldBlock: number, decided: number, blocked: number) {
  return {
    status: "counted",
    span: SPAN,
    candidate: { requests: seen, blocked: wouldBlock, rate: wouldBlock / seen },
    target: { requests: decided, blocked, rate: blocked / decided },
  } satisfies CandidateComparison;
}

function text(comparison: CandidateComparison): string {
  return renderToStaticMarkup(
    <ComparisonSentence comparison={comparison} targetScope="tier:free" />,
  ).replace(/<[^>]+>/g, "");
}

describe("the dry-run totals say what each counts", () => {
  it("names each side's denominator, and explains the requests another limit refused", () => {
    const comparison = counted(3_984, 1_432, 3_760, 746);
    expect(text(comparison)).toContain(
      "it would have blocked 1,432 of 3,984 requests it saw (36%); tier:free blocked 746 of 3,760 requests it decided (20%).",
    );
    expect(countsDifferenceWords(comparison, "tier:free")).toBe(
      "The candidate counts every request it saw (3,984), since it never rejects; tier:free counts only the requests it rejected or that got through every limit (3,760): the other 224 were refused by another limit (a ceiling or an endpoint class) that tier:free would have let through.",
    );
    expect(text(comparison)).toContain("the other 224 were refused by another limit");
  });

  it("says nothing more when both count the same requests", () => {
    const comparison = counted(100, 30, 100, 10);
    expect(countsDifferenceWords(comparison, "tier:free")).toBeNull();
    expect(text(comparison)).toMatch(/requests it decided \(10%\)\.$/);
  });

  it("states the rule alone when the rule in force decided more", () => {
    expect(countsDifferenceWords(counted(90, 30, 100, 10), "tier:free")).toMatch(
      /through every limit \(100\)\.$/,
    );
  });

  it("says nothing before anything is counted", () => {
    expect(countsDifferenceWords({ status: "not-started", span: SPAN }, "tier:free")).toBeNull();
  });
});
