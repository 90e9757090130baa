import { describe, expect, it } from "vitest";
import type { ScopeMinuteCount } from "../metric-minute/minute-counts";
import {
  type CompareCandidateOptions,
  compareCandidate,
  comparedSpan,
  firstWholeMinuteAfter,
} from "./compare-candidate";

const MIN = 60_000;
/** 2026-12-01T14:16:30Z: half way through the minute 14:16. */
const NOW_MS = Date.UTC(2026, 11, 1, 14, 16, 30);
const at = (hh: number, mm: number, ss = 0) => Date.UTC(2026, 11, 1, hh, mm, ss);
/** The last 15 minutes with the current one: [14:02, 14:17). */
const RANGE = { startMs: at(14, 2), endMs: at(14, 17), label: "Last 15 minutes" };

const CANDIDATE = "candidate:stricter";
const TARGET = "tier:pro";

/** Every minute from 13:50 to 14:16, both scopes: the candidate would block 3 of 10, the rule 1 of 10. */
function steadyTraffic(): ScopeMinuteCount[] {
  const rows: ScopeMinuteCount[] = [];
  for (let t = at(13, 50); t <= at(14, 16); t += MIN) {
    rows.push({ scope: CANDIDATE, minuteStartMs: t, allowed: 7, rejected: 0, wouldReject: 3 });
    rows.push({ scope: TARGET, minuteStartMs: t, allowed: 9, rejected: 1 });
    rows.push({ scope: "tier:free", minuteStartMs: t, allowed: 1000, rejected: 1000 });
  }
  return rows;
}

function options(lifecycle: CompareCandidateOptions["lifecycle"]): CompareCandidateOptions {
  return { candidateScope: CANDIDATE, targetScope: TARGET, lifecycle, range: RANGE, nowMs: NOW_MS };
}

describe("compareCandidate: both sides over one span", () => {
  it.each([
    {
      name: "a candidate younger than the range is compared from the first whole minute after its creation",
      lifecycle: { createdAtMs: at(14, 3, 20), changedAtMs: [] },
      bound: "created",
      startMs: at(14, 4),
      eventAtMs: at(14, 3, 20),
      // 14:04 .. 14:16: 13 minutes of rows on each side.
      minutes: 13,
    },
    {
      name: "a candidate older than the range is compared over the whole range",
      lifecycle: { createdAtMs: at(13, 0), changedAtMs: [] },
      bound: "range",
      startMs: at(14, 2),
      eventAtMs: at(13, 0),
      minutes: 15,
    },
    {
      name: "a candidate changed mid-range is compared since the first whole minute after its last change",
      lifecycle: { createdAtMs: at(13, 0), changedAtMs: [at(14, 10, 5), at(14, 5, 59)] },
      bound: "changed",
      startMs: at(14, 11),
      eventAtMs: at(14, 10, 5),
      minutes: 6,
    },
    {
      name: "a change before the range leaves the whole range",
      lifecycle: { createdAtMs: at(13, 0), changedAtMs: [at(13, 30)] },
      bound: "range",
      startMs: at(14, 2),
      eventAtMs: at(13, 30),
      minutes: 15,
    },
    {
      name: "a creation exactly on a minute's start counts that minute",
      lifecycle: { createdAtMs: at(14, 8), changedAtMs: [] },
      bound: "created",
      startMs: at(14, 8),
      eventAtMs: at(14, 8),
      minutes: 9,
    },
  ])("$name", ({ lifecycle, bound, startMs, eventAtMs, minutes }) => {
    const result = compareCandidate(steadyTraffic(), options(lifecycle));
    expect(result.status).toBe("counted");
    expect(result.span).toMatchObject({ bound, startMs, endMs: RANGE.endMs, eventAtMs });
    expect(result.span.elapsedMs).toBe(NOW_MS - startMs);
    if (result.status === "not-started") throw new Error("counted above");
    // The same minutes on both sides: n minutes of 3/10 and of 1/10, nothing of tier:free.
    expect(result.candidate).toEqual({ requests: 10 * minutes, blocked: 3 * minutes, rate: 0.3 });
    expect(result.target).toEqual({ requests: 10 * minutes, blocked: minutes, rate: 0.1 });
  });

  it("a candidate created in the current minute has no counted minute yet", () => {
    const result = compareCandidate(
      steadyTraffic(),
      options({ createdAtMs: at(14, 16, 10), changedAtMs: [] }),
    );
    expect(result).toEqual({
      status: "not-started",
      span: {
        startMs: at(14, 17),
        endMs: at(14, 17),
        bound: "created",
        eventAtMs: at(14, 16, 10),
        rangeLabel: "Last 15 minutes",
        elapsedMs: 0,
      },
    });
  });

  it("a candidate changed in the current minute has no counted minute yet, however old", () => {
    const result = compareCandidate(
      steadyTraffic(),
      options({ createdAtMs: at(12, 0), changedAtMs: [at(14, 16, 29)] }),
    );
    expect(result.status).toBe("not-started");
    expect(result.span.bound).toBe("changed");
  });

  it("minutes without a request on either side are no traffic, never 0 of 0 or NaN", () => {
    const result = compareCandidate(
      [{ scope: "tier:free", minuteStartMs: at(14, 10), allowed: 5, rejected: 5 }],
      options({ createdAtMs: at(14, 3, 20), changedAtMs: [] }),
    );
    expect(result).toMatchObject({
      status: "no-traffic",
      candidate: { requests: 0, blocked: 0, rate: null },
      target: { requests: 0, blocked: 0, rate: null },
    });
  });

  it("the creation minute is left out on both sides, so both count the same minutes", () => {
    // Only the creation minute and the one after: the rule's whole minute 14:03 would outweigh the
    // candidate's 40 s of it.
    const rows: ScopeMinuteCount[] = [
      { scope: CANDIDATE, minuteStartMs: at(14, 3), allowed: 0, rejected: 0, wouldReject: 4 },
      { scope: TARGET, minuteStartMs: at(14, 3), allowed: 60, rejected: 0 },
      { scope: CANDIDATE, minuteStartMs: at(14, 4), allowed: 5, rejected: 0, wouldReject: 5 },
      { scope: TARGET, minuteStartMs: at(14, 4), allowed: 10, rejected: 0 },
    ];
    const result = compareCandidate(rows, options({ createdAtMs: at(14, 3, 20), changedAtMs: [] }));
    expect(result).toMatchObject({
      status: "counted",
      candidate: { requests: 10, blocked: 5 },
      target: { requests: 10, blocked: 0, rate: 0 },
    });
  });

  it("a candidate with traffic while its target saw none still says what it would block", () => {
    const result = compareCandidate(
      [{ scope: CANDIDATE, minuteStartMs: at(14, 12), allowed: 1, rejected: 0, wouldReject: 1 }],
      options({ createdAtMs: at(13, 0), changedAtMs: [] }),
    );
    expect(result).toMatchObject({
      status: "counted",
      candidate: { requests: 2, blocked: 1, rate: 0.5 },
      target: { requests: 0, blocked: 0, rate: null },
    });
  });

  it("unusable rows (NaN, negative counts) are left out on both sides", () => {
    const result = compareCandidate(
      [
        { scope: CANDIDATE, minuteStartMs: at(14, 12), allowed: Number.NaN, rejected: 0 },
        { scope: TARGET, minuteStartMs: at(14, 12), allowed: -5, rejected: 0 },
        { scope: TARGET, minuteStartMs: at(14, 13), allowed: 2, rejected: 2 },
      ],
      options({ createdAtMs: at(13, 0), changedAtMs: [] }),
    );
    expect(result).toMatchObject({
      status: "counted",
      candidate: { requests: 0, rate: null },
      target: { requests: 4, blocked: 2, rate: 0.5 },
    });
  });
});

describe("comparedSpan", () => {
  it("a change recorded before the creation (an earlier candidate of that id) is ignored", () => {
    expect(
      comparedSpan({
        lifecycle: { createdAtMs: at(14, 3, 20), changedAtMs: [at(13, 0)] },
        range: RANGE,
        nowMs: NOW_MS,
      }),
    ).toMatchObject({ bound: "created", startMs: at(14, 4) });
  });

  it.each([
    ["a range that is not whole minutes", { ...RANGE, startMs: RANGE.startMs + 1 }, at(13, 0)],
    ["an empty range", { ...RANGE, endMs: RANGE.startMs }, at(13, 0)],
    ["an unreadable creation time", RANGE, Number.NaN],
  ])("refuses %s", (_name, range, createdAtMs) => {
    expect(() =>
      comparedSpan({ lifecycle: { createdAtMs, changedAtMs: [] }, range, nowMs: NOW_MS }),
    ).toThrow(RangeError);
  });

  it("firstWholeMinuteAfter keeps a minute's start and rounds anything later up", () => {
    expect([at(14, 3), at(14, 3, 0) + 1, at(14, 3, 59)].map(firstWholeMinuteAfter)).toEqual([
      at(14, 3),
      at(14, 4),
      at(14, 4),
    ]);
  });
});
