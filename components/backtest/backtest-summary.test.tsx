import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import type { BacktestResult } from "@/lib/control";
import { BacktestSummary } from "./backtest-summary";

const T0 = Date.UTC(2026, 11, 1, 12, 0);
const HOUR_MS = 3_600_000;

function result(overrides: Partial<BacktestResult> = {}): BacktestResult {
  return {
    span: {
      fromMs: T0,
      toMs: T0 + HOUR_MS,
      warmUpFromMs: T0 - 900_000,
      startsFrom: "empty (full) buckets 15 min before the window",
    },
    policyVersion: 3,
    minutes: Array.from({ length: 60 }, (_, m) => ({
      minuteMs: T0 + m * 60_000,
      recordedAdmitted: 0,
      recordedRejected: 0,
      nowAdmitted: m === 30 ? 20 : 0,
      nowRejected: m === 30 ? 20 : 0,
      draftAdmitted: m === 30 ? 40 : 0,
      draftRejected: 0,
    })),
    totals: {
      requests: 40,
      recordedRejected: 20,
      nowRejected: 20,
      draftRejected: 0,
      moreRejected: 0,
      moreAdmitted: 20,
    },
    byTier: [
      { tier: "pro", requests: 40, nowRejected: 20, draftRejected: 0, customersAffected: 1 },
    ],
    mostAffected: [
      {
        subject: "c:globex",
        customerId: "globex",
        tier: "pro",
        requests: 40,
        moreRejected: 0,
        moreAdmitted: 20,
        bindingNow: "tier:pro",
        bindingDraft: "incident:backtest-draft",
      },
    ],
    subjectsAffected: 1,
    customersAffected: 1,
    recordedRequests: 4,
    warmUpRequests: 0,
    withoutStore: 0,
    localStage: 0,
    replayedRequests: 4,
    trust: {
      sampleRates: [0.1],
      recordedRequests: 4,
      estimatedRequests: 40,
      gateways: 1,
      dropped: 3,
      gaps: [
        { gatewayId: "gw-1", fromMs: T0, toMs: T0 + 1000, reason: "buffer-full", requests: 3 },
      ],
      firstRecordedMs: T0,
      lastRecordedMs: T0 + 1000,
      withoutStore: 0,
      fidelity: { compared: 4, matched: 4, rate: 1 },
      notes: [],
    },
    isEmpty: false,
    ...overrides,
  };
}

describe("BacktestSummary", () => {
  it("an empty record says so and why, with no chart or zeros", () => {
    const html = renderToStaticMarkup(
      <BacktestSummary
        result={result({
          isEmpty: true,
          trust: { ...result().trust, lastRecordedMs: null, gateways: 0 },
        })}
        focus={{ kind: "all" }}
        windowMs={HOUR_MS}
      />,
    );
    expect(html).toContain("No recorded traffic to replay");
    expect(html).toContain("No traffic was recorded in the last hour");
    expect(html).not.toContain("backtest-headline");
  });

  it("a raise: the customer's headline, the affected row with both bindings, and the trust line", () => {
    const html = renderToStaticMarkup(
      <BacktestSummary
        result={result()}
        focus={{ kind: "customer", customerId: "globex" }}
        windowMs={HOUR_MS}
      />,
    );
    expect(html).toContain(
      "The raise would have admitted about 20 more of globex&#x27;s requests in the last hour (out of about 40 in the window).",
    );
    expect(html).toContain('href="/customers/globex"');
    expect(html).toContain("the raise (incident:backtest-draft)");
    expect(html).toContain("4 requests recorded by 1 gateway, standing for about 40.");
    expect(html).toContain("Sampled by subject at 10%");
    expect(html).toContain("3 requests dropped by a full buffer");
    // A customer's focus has no per-customer rejected counts: they are not shown as zeros.
    expect(html).not.toContain("backtest-now-rejected");
  });
});
