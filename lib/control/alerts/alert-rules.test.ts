import { describe, expect, it } from "vitest";
import { MINUTE_MS, type ScopeMinuteCount } from "../metric-minute/minute-counts";
import {
  type DecisionMinute,
  detectDegradedDecisions,
  detectExpiringIncidents,
  detectRejectionRateAlerts,
  evaluateRejectionRates,
  type IncidentForExpiry,
} from "./alert-rules";

/** 12:00:30 UTC: the current minute (12:00) is still open, so windows end at 12:00. */
const NOW_MS = Date.UTC(2025, 2, 4, 12, 0, 30);
const END_MS = Date.UTC(2025, 2, 4, 12, 0, 0);

/**
 * A scope's series: `baseline` for each of the 60 minutes before the recent window, `recent` for
 * each of the 5 minutes before `END_MS`. Each is [requests, rejected] per minute.
 */
function series(
  scope: string,
  baseline: readonly [number, number] | null,
  recent: readonly [number, number] | null,
): ScopeMinuteCount[] {
  const rows: ScopeMinuteCount[] = [];
  const push = (minuteStartMs: number, [requests, rejected]: readonly [number, number]) =>
    rows.push({ scope, minuteStartMs, allowed: requests - rejected, rejected });
  if (baseline !== null) {
    for (let i = 65; i > 5; i--) push(END_MS - i * MINUTE_MS, baseline);
  }
  if (recent !== null) {
    for (let i = 5; i > 0; i--) push(END_MS - i * MINUTE_MS, recent);
  }
  return rows;
}

function verdictOf(rows: readonly ScopeMinuteCount[], scope: string, options = {}): string {
  const evaluation = evaluateRejectionRates(rows, { nowMs: NOW_MS, ...options }).find(
    (e) => e.scope === scope,
  );
  return evaluation?.verdict ?? "absent";
}

describe("rejection-rate change alert", () => {
  it("a jump from 2% to 100% alerts, as a rise, with the rates and a sentence", () => {
    const rows = series("tier:free", [100, 2], [100, 100]);
    const alerts = detectRejectionRateAlerts(rows, { nowMs: NOW_MS });
    expect(alerts).toHaveLength(1);
    expect(alerts[0]).toMatchObject({
      kind: "rejection-rate-change",
      key: "rejection-rate-change:tier:free:rise",
      scope: "tier:free",
      direction: "rise",
      baselineRate: 0.02,
      recentRate: 1,
      baselineRequests: 6000,
      recentRequests: 500,
      windowEndMs: END_MS,
    });
    expect(alerts[0]?.absoluteChange).toBeCloseTo(0.98);
    expect(alerts[0]?.message).toBe(
      "Rejections on tier:free rose from 2% to 100% in the last 5 min, against the 1 h before (500 requests).",
    );
  });

  it("a steady 40% does not alert: a level is not a change", () => {
    const rows = series("tier:pro", [100, 40], [100, 40]);
    expect(detectRejectionRateAlerts(rows, { nowMs: NOW_MS })).toEqual([]);
    expect(verdictOf(rows, "tier:pro")).toBe("steady");
  });

  it("a handful of requests does not alert, in the recent window or the baseline", () => {
    const fewRecent = series("customer:acme", [100, 2], [1, 1]); // 5 requests, all rejected
    expect(detectRejectionRateAlerts(fewRecent, { nowMs: NOW_MS })).toEqual([]);
    expect(verdictOf(fewRecent, "customer:acme")).toBe("low-volume");

    const fewBaseline = series("customer:acme", [1, 0], [100, 100]); // 60 baseline requests
    expect(detectRejectionRateAlerts(fewBaseline, { nowMs: NOW_MS })).toEqual([]);
    expect(verdictOf(fewBaseline, "customer:acme")).toBe("low-volume");
  });

  it("the volume minimums are options", () => {
    const rows = series("customer:acme", [1, 0], [1, 1]);
    expect(
      detectRejectionRateAlerts(rows, {
        nowMs: NOW_MS,
        minRecentRequests: 5,
        minBaselineRequests: 60,
      }),
    ).toHaveLength(1);
  });

  it("a drop alerts too, as a drop, unless drops are switched off", () => {
    const rows = series("tier:free/endpoint:reports", [100, 90], [100, 0]);
    const [alert] = detectRejectionRateAlerts(rows, { nowMs: NOW_MS });
    expect(alert).toMatchObject({ direction: "drop", baselineRate: 0.9, recentRate: 0 });
    expect(alert?.message).toContain("fell from 90% to 0%");

    expect(detectRejectionRateAlerts(rows, { nowMs: NOW_MS, alertOnDrop: false })).toEqual([]);
    expect(verdictOf(rows, "tier:free/endpoint:reports", { alertOnDrop: false })).toBe(
      "drop-ignored",
    );
  });

  it("a gap with no traffic neither crashes nor alerts", () => {
    const silentRecent = series("tier:free", [100, 2], null);
    expect(detectRejectionRateAlerts(silentRecent, { nowMs: NOW_MS })).toEqual([]);
    const [evaluation] = evaluateRejectionRates(silentRecent, { nowMs: NOW_MS });
    expect(evaluation).toMatchObject({ verdict: "low-volume", absoluteChange: null });
    expect(evaluation?.recent).toMatchObject({ requests: 0, rejected: 0, rate: null });

    const silentBaseline = series("tier:free", null, [100, 100]);
    expect(detectRejectionRateAlerts(silentBaseline, { nowMs: NOW_MS })).toEqual([]);
    expect(verdictOf(silentBaseline, "tier:free")).toBe("no-baseline");

    const zeros = series("tier:free", [0, 0], [0, 0]);
    expect(detectRejectionRateAlerts(zeros, { nowMs: NOW_MS })).toEqual([]);
    expect(verdictOf(zeros, "tier:free")).toBe("no-baseline");

    expect(detectRejectionRateAlerts([], { nowMs: NOW_MS })).toEqual([]);
  });

  it("a gap inside the baseline is just fewer requests", () => {
    const rows = series("tier:free", [100, 2], [100, 100]).filter(
      (row) =>
        row.minuteStartMs < END_MS - 40 * MINUTE_MS || row.minuteStartMs >= END_MS - 5 * MINUTE_MS,
    );
    const [alert] = detectRejectionRateAlerts(rows, { nowMs: NOW_MS });
    expect(alert?.baselineRequests).toBe(2500);
  });

  it("a rise from exactly 0% alerts: any rate is infinitely larger than none", () => {
    const rows = series("ceiling", [100, 0], [100, 50]);
    expect(detectRejectionRateAlerts(rows, { nowMs: NOW_MS })[0]).toMatchObject({
      baselineRate: 0,
      recentRate: 0.5,
    });
  });

  it("a large relative change that is small in points does not alert", () => {
    const rows = series("tier:pro", [1000, 1], [1000, 5]); // 0.1% to 0.5%
    expect(verdictOf(rows, "tier:pro")).toBe("steady");
  });

  it("a large change in points that is small relatively does not alert", () => {
    const rows = series("tier:pro", [100, 50], [100, 75]); // 50% to 75%: 1.5 times
    expect(verdictOf(rows, "tier:pro")).toBe("steady");
    expect(verdictOf(rows, "tier:pro", { minRelativeChange: 1.5 })).toBe("alert");
  });

  it("the minute still being counted is left out", () => {
    const rows: ScopeMinuteCount[] = [
      ...series("tier:free", [100, 2], [100, 2]),
      { scope: "tier:free", minuteStartMs: END_MS, allowed: 0, rejected: 10_000 },
    ];
    expect(verdictOf(rows, "tier:free")).toBe("steady");
  });

  it("rows for the same scope and minute add up", () => {
    const rows = [
      ...series("tier:free", [50, 1], [50, 50]),
      ...series("tier:free", [50, 1], [50, 50]),
    ];
    expect(detectRejectionRateAlerts(rows, { nowMs: NOW_MS })[0]).toMatchObject({
      baselineRequests: 6000,
      recentRequests: 500,
    });
  });

  it("ignores unusable rows instead of poisoning the sums", () => {
    const rows: ScopeMinuteCount[] = [
      ...series("tier:free", [100, 40], [100, 40]),
      { scope: "tier:free", minuteStartMs: END_MS - MINUTE_MS, allowed: Number.NaN, rejected: 1 },
      { scope: "tier:free", minuteStartMs: END_MS - MINUTE_MS, allowed: 0, rejected: -500 },
      { scope: "tier:free", minuteStartMs: Number.NaN, allowed: 0, rejected: 500 },
    ];
    const [evaluation] = evaluateRejectionRates(rows, { nowMs: NOW_MS });
    expect(evaluation).toMatchObject({ verdict: "steady" });
    expect(evaluation?.recent.rate).toBeCloseTo(0.4);
  });

  it("orders alerts by the size of the change, then by scope", () => {
    const rows = [
      ...series("tier:b", [100, 10], [100, 60]),
      ...series("tier:a", [100, 10], [100, 60]),
      ...series("tier:c", [100, 2], [100, 100]),
      ...series("tier:d", [100, 40], [100, 40]),
    ];
    expect(detectRejectionRateAlerts(rows, { nowMs: NOW_MS }).map((a) => a.scope)).toEqual([
      "tier:c",
      "tier:a",
      "tier:b",
    ]);
  });

  it("window lengths are options", () => {
    // One bad minute against a 10-minute baseline: alerts with a 1-minute recent window only.
    const rows: ScopeMinuteCount[] = [];
    for (let i = 11; i > 1; i--) {
      rows.push({ scope: "s", minuteStartMs: END_MS - i * MINUTE_MS, allowed: 98, rejected: 2 });
    }
    rows.push({ scope: "s", minuteStartMs: END_MS - MINUTE_MS, allowed: 0, rejected: 100 });
    const options = { nowMs: NOW_MS, recentWindowMs: MINUTE_MS, baselineWindowMs: 10 * MINUTE_MS };
    expect(detectRejectionRateAlerts(rows, options)).toHaveLength(1);
    expect(detectRejectionRateAlerts(rows, { nowMs: NOW_MS })).toEqual([]);
  });

  it.each([
    [{ recentWindowMs: 0 }, "recentWindowMs"],
    [{ baselineWindowMs: -1 }, "baselineWindowMs"],
    [{ minAbsoluteChange: 2 }, "minAbsoluteChange"],
    [{ minRelativeChange: 0.5 }, "minRelativeChange"],
    [{ minRecentRequests: Number.NaN }, "minRecentRequests"],
    [{ nowMs: Number.NaN }, "nowMs"],
  ])("refuses a meaningless option %o by name", (options, name) => {
    expect(() => detectRejectionRateAlerts([], { nowMs: NOW_MS, ...options })).toThrow(name);
  });
});

describe("incident override about to expire", () => {
  const incident = (id: string, expiresInMs: number, extra: Partial<IncidentForExpiry> = {}) => ({
    id,
    customerId: "acme",
    endpointClass: null,
    startsAt: new Date(NOW_MS - 30 * MINUTE_MS).toISOString(),
    expiresAt: new Date(NOW_MS + expiresInMs).toISOString(),
    ...extra,
  });

  it("warns about an override in force that expires within the window, soonest first", () => {
    const alerts = detectExpiringIncidents(
      [
        incident("inc-b", 14 * MINUTE_MS),
        incident("inc-a", 2 * MINUTE_MS),
        incident("inc-c", 16 * MINUTE_MS),
      ],
      { nowMs: NOW_MS },
    );
    expect(alerts.map((a) => a.incidentId)).toEqual(["inc-a", "inc-b"]);
    expect(alerts[0]).toEqual({
      kind: "incident-expiring",
      key: "incident-expiring:inc-a",
      incidentId: "inc-a",
      scope: "incident:inc-a",
      customerId: "acme",
      endpointClass: null,
      expiresAtMs: NOW_MS + 2 * MINUTE_MS,
      remainingMs: 2 * MINUTE_MS,
      message:
        "The incident override for acme (all endpoints) expires in 2 min; extend it or let the normal limit return.",
    });
  });

  it("names the endpoint class when there is one", () => {
    const [alert] = detectExpiringIncidents(
      [incident("i", MINUTE_MS, { endpointClass: "reports" })],
      {
        nowMs: NOW_MS,
      },
    );
    expect(alert?.message).toContain("(endpoint class reports)");
  });

  it("stays quiet for expired, not yet started and unreadable overrides", () => {
    const alerts = detectExpiringIncidents(
      [
        incident("expired", 0),
        incident("long-gone", -MINUTE_MS),
        incident("future", 5 * MINUTE_MS, { startsAt: new Date(NOW_MS + MINUTE_MS).toISOString() }),
        incident("garbled", 5 * MINUTE_MS, { expiresAt: "soon" }),
        incident("garbled-start", 5 * MINUTE_MS, { startsAt: "yesterday" }),
      ],
      { nowMs: NOW_MS },
    );
    expect(alerts).toEqual([]);
  });

  it("an override without a start is judged by its expiry alone", () => {
    const { startsAt: _omitted, ...noStart } = incident("i", MINUTE_MS);
    expect(detectExpiringIncidents([noStart], { nowMs: NOW_MS })).toHaveLength(1);
  });

  it("the warning window is an option, inclusive at its edge", () => {
    const incidents = [incident("i", 60 * MINUTE_MS)];
    expect(detectExpiringIncidents(incidents, { nowMs: NOW_MS })).toEqual([]);
    expect(
      detectExpiringIncidents(incidents, { nowMs: NOW_MS, warningWindowMs: 60 * MINUTE_MS }),
    ).toHaveLength(1);
  });

  it("refuses a meaningless warning window", () => {
    expect(() => detectExpiringIncidents([], { nowMs: NOW_MS, warningWindowMs: 0 })).toThrow(
      "warningWindowMs",
    );
  });
});

describe("decisions made without Redis", () => {
  /** One minute of the fleet's decisions; NOW_MS is 30 s into the 12:00 minute. */
  const minute = (
    startMs: number,
    decisions: number,
    withoutStore: Partial<DecisionMinute["withoutStore"]> = {},
  ): DecisionMinute => ({
    minuteStartMs: startMs,
    decisions,
    withoutStore: { storeError: 0, timeout: 0, circuitOpen: 0, ...withoutStore },
  });

  it("alerts at 10 or more and 1% or more over the previous minute and this one so far, saying why", () => {
    const minutes = [
      minute(END_MS - MINUTE_MS, 500, { storeError: 4, circuitOpen: 3 }),
      minute(END_MS, 200, { timeout: 3 }),
    ];
    const [alert, ...others] = detectDegradedDecisions(minutes, { nowMs: NOW_MS });
    expect(others).toEqual([]);
    expect(alert).toMatchObject({
      kind: "degraded-decisions",
      key: "degraded-decisions",
      fromMs: END_MS - MINUTE_MS,
      toMs: NOW_MS,
      decisions: 700,
      decisionsWithoutStore: 10,
      withoutStore: { storeError: 4, timeout: 3, circuitOpen: 3 },
    });
    expect(alert?.share).toBeCloseTo(10 / 700);
    expect(alert?.message).toContain("10 of 700 decisions");
    expect(alert?.message).toContain(
      "4 with Redis down or refusing, 3 timed out, 3 with the circuit open",
    );
  });

  it("stays quiet below either threshold: 9 decisions, or under 1% of them", () => {
    expect(
      detectDegradedDecisions([minute(END_MS, 100, { storeError: 9 })], { nowMs: NOW_MS }),
    ).toEqual([]);
    expect(
      detectDegradedDecisions([minute(END_MS, 2_000, { timeout: 19 })], { nowMs: NOW_MS }),
    ).toEqual([]);
    expect(
      detectDegradedDecisions([minute(END_MS, 2_000, { timeout: 20 })], { nowMs: NOW_MS }),
    ).toHaveLength(1);
  });

  it("minutes outside the window do not count: an outage an hour ago is over", () => {
    const minutes = [minute(END_MS - 2 * MINUTE_MS, 100, { storeError: 100 })];
    expect(detectDegradedDecisions(minutes, { nowMs: NOW_MS })).toEqual([]);
  });

  it("no traffic, or unusable counts, never alert and never divide by zero", () => {
    expect(detectDegradedDecisions([], { nowMs: NOW_MS })).toEqual([]);
    expect(
      detectDegradedDecisions([minute(END_MS, 0, { storeError: Number.NaN, timeout: -5 })], {
        nowMs: NOW_MS,
      }),
    ).toEqual([]);
  });

  it("the thresholds are options, and meaningless ones are refused", () => {
    const minutes = [minute(END_MS, 100, { circuitOpen: 2 })];
    expect(
      detectDegradedDecisions(minutes, { nowMs: NOW_MS, minDecisionsWithoutStore: 2 }),
    ).toHaveLength(1);
    expect(() => detectDegradedDecisions(minutes, { nowMs: NOW_MS, minShare: 0 })).toThrow(
      "minShare",
    );
    expect(() =>
      detectDegradedDecisions(minutes, { nowMs: NOW_MS, minDecisionsWithoutStore: 0 }),
    ).toThrow("minDecisionsWithoutStore");
    expect(() => detectDegradedDecisions(minutes, { nowMs: Number.NaN })).toThrow("nowMs");
  });
});
