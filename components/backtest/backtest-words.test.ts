import { describe, expect, it } from "vitest";
import type { BacktestResult } from "@/lib/control";
import {
  backtestFigures,
  backtestFocusOf,
  describeBacktestHeadline,
  describeBacktestTrust,
  describeBacktestWindow,
  describeBinding,
  describeEmptyBacktest,
  formatRequestCount,
  toBacktestChartData,
} from "./backtest-words";

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
const T0 = 1_700_000_000_000;

type Overrides = {
  [K in keyof BacktestResult]?: BacktestResult[K] extends object
    ? Partial<BacktestResult[K]>
    : BacktestResult[K];
};

function result(overrides: Overrides = {}): BacktestResult {
  const base: BacktestResult = {
    span: { fromMs: T0, toMs: T0 + DAY_MS, warmUpFromMs: T0 - 900_000, startsFrom: "x" },
    policyVersion: 7,
    minutes: [],
    totals: {
      requests: 1000,
      recordedRejected: 40,
      nowRejected: 40,
      draftRejected: 71,
      moreRejected: 31,
      moreAdmitted: 0,
    },
    byTier: [
      { tier: "pro", requests: 1000, nowRejected: 4, draftRejected: 31, customersAffected: 41 },
      { tier: "free", requests: 500, nowRejected: 36, draftRejected: 40, customersAffected: 0 },
    ],
    mostAffected: [],
    subjectsAffected: 41,
    customersAffected: 41,
    recordedRequests: 1500,
    warmUpRequests: 0,
    withoutStore: 0,
    localStage: 0,
    replayedRequests: 1000,
    trust: {
      sampleRates: [1],
      recordedRequests: 1500,
      estimatedRequests: 1500,
      gateways: 2,
      dropped: 0,
      gaps: [],
      firstRecordedMs: T0,
      lastRecordedMs: T0 + 1000,
      withoutStore: 0,
      fidelity: { compared: 1000, matched: 998, rate: 0.998 },
      notes: [],
    },
    isEmpty: false,
  };
  return {
    ...base,
    ...overrides,
    totals: { ...base.totals, ...overrides.totals },
    trust: { ...base.trust, ...overrides.trust },
    span: { ...base.span, ...overrides.span },
  } as BacktestResult;
}

describe("describeBacktestHeadline", () => {
  it.each([
    {
      name: "a stricter tier says the tier's rejected share, now and draft, and customers affected",
      value: result(),
      focus: { kind: "tier", tier: "pro" } as const,
      windowMs: DAY_MS,
      expected:
        "Over the last 24 h this would have rejected 3.1% of pro traffic (0.4% now), 41 customers affected.",
    },
    {
      name: "a looser edit says how many more it admits",
      value: result({ totals: { moreRejected: 0, moreAdmitted: 27 } }),
      focus: { kind: "all" } as const,
      windowMs: DAY_MS,
      expected:
        "Over the last 24 h this would have admitted 27 more requests of all traffic, rejecting 7.1% of it (4% now), 41 customers affected.",
    },
    {
      name: "an edit that changes nothing says so",
      value: result({ totals: { moreRejected: 0, moreAdmitted: 0 } }),
      focus: { kind: "tier", tier: "free" } as const,
      windowMs: DAY_MS,
      expected:
        "Over the last 24 h this would have changed no request's outcome: 8% of free traffic rejected, as now.",
    },
    {
      name: "both directions are both said",
      value: result({ totals: { moreRejected: 5, moreAdmitted: 3 } }),
      focus: { kind: "tier", tier: "pro" } as const,
      windowMs: DAY_MS,
      expected:
        "Over the last 24 h this would have rejected 3.1% of pro traffic (0.4% now): 5 more rejected and 3 more admitted, 41 customers affected.",
    },
    {
      name: "a tier with no recorded traffic has nothing to compare",
      value: result(),
      focus: { kind: "tier", tier: "enterprise" } as const,
      windowMs: DAY_MS,
      expected: "No enterprise traffic was recorded in the last 24 h: there is nothing to compare.",
    },
    {
      name: "a raise says how many more of the customer's requests it admits, in the last hour",
      value: result({
        totals: { moreRejected: 0, moreAdmitted: 20 },
        mostAffected: [
          {
            subject: "c:globex",
            customerId: "globex",
            tier: "pro",
            requests: 40,
            moreRejected: 0,
            moreAdmitted: 20,
            bindingNow: "tier:pro",
            bindingDraft: null,
          },
        ],
      }),
      focus: { kind: "customer", customerId: "globex" } as const,
      windowMs: HOUR_MS,
      expected:
        "The raise would have admitted 20 more of globex's requests in the last hour (out of 40 in the window).",
    },
    {
      name: "a raise that changes nothing says so",
      value: result({ totals: { moreRejected: 0, moreAdmitted: 0 } }),
      focus: { kind: "customer", customerId: "globex" } as const,
      windowMs: HOUR_MS,
      expected:
        "In the last hour this would have changed the outcome of none of globex's requests.",
    },
    {
      name: "a sampled record's counts are said as estimates",
      value: result({
        totals: { moreRejected: 0, moreAdmitted: 20 },
        trust: { sampleRates: [0.1, 1] },
      }),
      focus: { kind: "customer", customerId: "globex" } as const,
      windowMs: HOUR_MS,
      expected:
        "The raise would have admitted about 20 more of globex's requests in the last hour.",
    },
  ])("$name", ({ value, focus, windowMs, expected }) => {
    expect(describeBacktestHeadline(value, focus, windowMs)).toBe(expected);
  });
});

describe("backtestFigures", () => {
  it("rounds scaled counts to whole requests", () => {
    const figures = backtestFigures(
      result({
        totals: { requests: 33.3, nowRejected: 3.34, draftRejected: 6.6, moreRejected: 3.26 },
      }),
      { kind: "all" },
    );
    expect(figures).toMatchObject({
      requests: 33,
      nowRejected: 3,
      draftRejected: 7,
      moreRejected: 3,
    });
  });
  it("a tier without a row has no requests and no share", () => {
    expect(backtestFigures(result(), { kind: "tier", tier: "none" })).toMatchObject({
      requests: 0,
      nowRejectedShare: null,
      hasRequests: false,
    });
  });
});

describe("backtestFocusOf", () => {
  it.each([
    [
      { kind: "tier", name: "pro", limit: { algorithm: "fixed-window", limit: 1, windowMs: 1000 } },
      { kind: "tier", tier: "pro" },
    ],
    [{ kind: "settings" }, { kind: "all" }],
    [
      { kind: "incident", customerId: "globex", endpointClass: null, factor: 2, limit: null },
      { kind: "customer", customerId: "globex" },
    ],
    [
      { kind: "candidate", target: "tier:free/endpoint:search" },
      { kind: "tier", tier: "free" },
    ],
    [{ kind: "candidate", target: "ceiling:customer" }, { kind: "all" }],
  ] as const)("%j speaks of %j", (draft, focus) => {
    // biome-ignore lint/suspicious/noExplicitAny: table rows are partial drafts by design
    expect(backtestFocusOf(draft as any)).toEqual(focus);
  });
});

describe("describeBinding", () => {
  it.each([
    [null, "no limit bound"],
    ["tier:pro", "tier:pro"],
    ["incident:backtest-draft", "the raise (incident:backtest-draft)"],
    ["incident:inc-7", "incident:inc-7"],
  ])("%s reads %s", (scope, words) => {
    expect(describeBinding(scope)).toBe(words);
  });
});

describe("describeBacktestWindow", () => {
  it.each([
    [HOUR_MS, "the last hour"],
    [DAY_MS, "the last 24 h"],
    [30 * 60_000, "the last 30 min"],
  ])("%d ms is %s", (windowMs, words) => {
    expect(describeBacktestWindow(windowMs)).toBe(words);
  });
});

describe("formatRequestCount", () => {
  it("an estimate is said as about, rounded to whole requests; a count as is", () => {
    expect(formatRequestCount(20, true)).toBe("about 20");
    expect(formatRequestCount(20.4, true)).toBe("about 20");
    expect(formatRequestCount(1234, false)).toBe("1,234");
  });
});

describe("describeBacktestTrust", () => {
  it("an unsampled record without gaps says so, with the fidelity", () => {
    const lines = describeBacktestTrust(
      result({ span: { startsFrom: "empty (full) buckets 15 min before the window" } }),
    );
    expect(lines.map((line) => line.text)).toEqual([
      "1,500 requests recorded by 2 gateways.",
      "Every request recorded (no sampling).",
      "No gaps in the record.",
      "Buckets start from empty (full) buckets 15 min before the window.",
      "The replay of the policy in force matched 99.8% of 1,000 recorded decisions.",
    ]);
  });
  it("a sampled record with gaps says what it stands for and what was lost", () => {
    const lines = describeBacktestTrust(
      result({
        trust: {
          sampleRates: [0.1],
          recordedRequests: 150,
          estimatedRequests: 1500,
          gateways: 1,
          dropped: 12,
          gaps: [
            { gatewayId: "g1", fromMs: T0, toMs: T0 + 1000, reason: "buffer-full", requests: 12 },
          ],
          fidelity: { compared: 0, matched: 0, rate: null },
        },
      }),
    );
    const text = Object.fromEntries(lines.map((line) => [line.key, line.text]));
    expect(text.record).toBe("150 requests recorded by 1 gateway, standing for about 1,500.");
    expect(text.sampling).toMatch(/^Sampled by subject at 10%/);
    expect(text.gaps).toBe(
      "1 gap in the record (12 requests dropped): buckets after a gap start fuller than they were.",
    );
    expect(text.fidelity).toMatch(/^Fidelity not checked/);
  });
});

describe("describeEmptyBacktest", () => {
  it("with nothing ever recorded, says recording may be off", () => {
    const empty = result({ isEmpty: true, trust: { lastRecordedMs: null, gateways: 0 } });
    expect(describeEmptyBacktest(empty, DAY_MS)).toMatch(
      /^No traffic was recorded in the last 24 h, so there is nothing to replay\. Gateways record only when recording is on/,
    );
  });
});

describe("toBacktestChartData", () => {
  const minute = (m: number, nowRejected = 1) => ({
    minuteMs: T0 + m * 60_000,
    recordedAdmitted: 0,
    recordedRejected: 0,
    nowAdmitted: 2,
    nowRejected,
    draftAdmitted: 1,
    draftRejected: nowRejected + 1,
  });
  it("an hour stays per minute", () => {
    const data = toBacktestChartData(Array.from({ length: 60 }, (_, m) => minute(m)));
    expect(data.bucketMs).toBe(60_000);
    expect(data.buckets).toHaveLength(60);
    expect(data.endMs - data.startMs).toBe(HOUR_MS);
  });
  it("a day is grouped into 10-minute buckets, summing every count", () => {
    const data = toBacktestChartData(Array.from({ length: 1440 }, (_, m) => minute(m, m % 2)));
    expect(data.bucketMs).toBe(600_000);
    expect(data.buckets).toHaveLength(144);
    expect(data.buckets[0]).toEqual({
      startMs: T0,
      nowAdmitted: 20,
      nowRejected: 5,
      draftAdmitted: 10,
      draftRejected: 15,
    });
    expect(data.bucketStartsMs[1]).toBe(T0 + 600_000);
  });
  it("no minutes give no buckets", () => {
    expect(toBacktestChartData([]).buckets).toEqual([]);
  });
});
