/**
 * A backtest's result (`POST /api/v1/backtest`, `runBacktest`) in words and figures for the
 * console: the headline sentence, the facts behind it, the trust line, and the per-minute counts
 * grouped for a chart. Pure: no React, no clock, no I/O. Counts of a sampled record are estimates
 * (scaled by 1 / sample rate) and are rounded to whole requests here, said as "about".
 */

import { formatDurationMs, formatNumber, formatPercent } from "@/lib/console/format";
import type { BacktestResult, RunBacktestOptions } from "@/lib/control";

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;

/** A draft as the API takes it (defaults not yet applied). */
export type BacktestDraft = RunBacktestOptions["draft"];

/** Whose traffic the headline speaks of. */
export type BacktestFocus =
  | { readonly kind: "tier"; readonly tier: string }
  | { readonly kind: "customer"; readonly customerId: string }
  | { readonly kind: "all" };

/** What the draft is about: a tier edit speaks of the tier's traffic, a raise of its customer's. */
export function backtestFocusOf(draft: BacktestDraft): BacktestFocus {
  switch (draft.kind) {
    case "tier":
      return { kind: "tier", tier: draft.name };
    case "incident":
    case "customer-override":
      return { kind: "customer", customerId: draft.customerId };
    case "candidate": {
      // `tier:pro` or `tier:pro/endpoint:search`: that tier's traffic.
      const tier = draft.target?.match(/^tier:([^/]+)/)?.[1];
      return tier === undefined ? { kind: "all" } : { kind: "tier", tier };
    }
    case "endpoint-class":
    case "settings":
      return { kind: "all" };
    default: {
      const unknownDraft: never = draft;
      throw new Error(`unknown draft ${JSON.stringify(unknownDraft)}`);
    }
  }
}

/** "the last hour", "the last 24 h", "the last 30 min". */
export function describeBacktestWindow(windowMs: number): string {
  if (windowMs === HOUR_MS) return "the last hour";
  if (windowMs % HOUR_MS === 0) return `the last ${windowMs / HOUR_MS} h`;
  return `the last ${formatDurationMs(windowMs)}`;
}

/** A count of requests as shown: whole, with "about" when it is an estimate (a sampled record). */
export function formatRequestCount(count: number, isEstimate: boolean): string {
  const rounded = formatNumber(Math.round(count));
  return isEstimate ? `about ${rounded}` : rounded;
}

/** Whether any part of the record was sampled (its counts are estimates). */
export function isSampled(result: Pick<BacktestResult, "trust">): boolean {
  return result.trust.sampleRates.some((rate) => rate < 1);
}

/** The figures the headline rests on, for the focus's traffic. Rounded to whole requests. */
export interface BacktestFigures {
  /** The traffic's name in a sentence: "pro traffic", "globex's requests", "all traffic". */
  readonly trafficWords: string;
  /** The requests' label: "Requests of tier pro", "Requests of globex", "Requests". */
  readonly requestsLabel: string;
  readonly requests: number;
  readonly nowRejected: number;
  readonly draftRejected: number;
  /** Admitted now, rejected under the draft. */
  readonly moreRejected: number;
  /** Rejected now, admitted under the draft. */
  readonly moreAdmitted: number;
  /** null when the focus saw no requests. */
  readonly nowRejectedShare: number | null;
  readonly draftRejectedShare: number | null;
  readonly customersAffected: number;
  /** Whether the focus's figures are known: a customer's are only when the draft changed them. */
  readonly hasRequests: boolean;
}

const share = (part: number, whole: number): number | null => (whole > 0 ? part / whole : null);

/**
 * The focus's figures. A tier: its row of `byTier` (changed outcomes are the whole result's: a
 * tier draft changes only that tier's customers). A customer: the whole result's changed
 * outcomes (a raise or an override changes only that customer), its requests from
 * `mostAffected` when it is there. Everything else: the totals.
 */
export function backtestFigures(result: BacktestResult, focus: BacktestFocus): BacktestFigures {
  const { totals } = result;
  const changed = {
    moreRejected: Math.round(totals.moreRejected),
    moreAdmitted: Math.round(totals.moreAdmitted),
  };
  if (focus.kind === "tier") {
    const row = result.byTier.find((tier) => tier.tier === focus.tier);
    const requests = Math.round(row?.requests ?? 0);
    const nowRejected = Math.round(row?.nowRejected ?? 0);
    const draftRejected = Math.round(row?.draftRejected ?? 0);
    return {
      trafficWords: `${focus.tier} traffic`,
      requestsLabel: `Requests of tier ${focus.tier}`,
      requests,
      nowRejected,
      draftRejected,
      ...changed,
      nowRejectedShare: share(nowRejected, requests),
      draftRejectedShare: share(draftRejected, requests),
      customersAffected: row?.customersAffected ?? 0,
      hasRequests: requests > 0,
    };
  }
  if (focus.kind === "customer") {
    const row = result.mostAffected.find((entry) => entry.customerId === focus.customerId);
    const requests = Math.round(row?.requests ?? 0);
    return {
      trafficWords: `${focus.customerId}'s requests`,
      requestsLabel: `Requests of ${focus.customerId}`,
      requests,
      // Per-customer rejections are not in the result; the changed outcomes are.
      nowRejected: 0,
      draftRejected: 0,
      ...changed,
      nowRejectedShare: null,
      draftRejectedShare: null,
      customersAffected: row === undefined ? 0 : 1,
      hasRequests: requests > 0,
    };
  }
  const requests = Math.round(totals.requests);
  const nowRejected = Math.round(totals.nowRejected);
  const draftRejected = Math.round(totals.draftRejected);
  return {
    trafficWords: "all traffic",
    requestsLabel: "Requests",
    requests,
    nowRejected,
    draftRejected,
    ...changed,
    nowRejectedShare: share(nowRejected, requests),
    draftRejectedShare: share(draftRejected, requests),
    customersAffected: result.customersAffected,
    hasRequests: requests > 0,
  };
}

function customersWords(count: number): string {
  return `${formatNumber(count)} customer${count === 1 ? "" : "s"} affected`;
}

/**
 * The headline, in the words: "Over the last 24 h this would have rejected 3.1% of pro
 * traffic (0.4% now), 41 customers affected." A raise: "The raise would have admitted 20 more of
 * globex's requests in the last hour." An empty record is said by `describeEmptyBacktest`.
 */
export function describeBacktestHeadline(
  result: BacktestResult,
  focus: BacktestFocus,
  windowMs: number,
): string {
  const figures = backtestFigures(result, focus);
  const window = describeBacktestWindow(windowMs);
  const count = (value: number) => formatRequestCount(value, isSampled(result));
  if (focus.kind === "customer") {
    const { moreAdmitted, moreRejected } = figures;
    if (moreAdmitted === 0 && moreRejected === 0) {
      return `In ${window} this would have changed the outcome of none of ${figures.trafficWords}.`;
    }
    const parts: string[] = [];
    if (moreAdmitted > 0) parts.push(`admitted ${count(moreAdmitted)} more`);
    if (moreRejected > 0) parts.push(`rejected ${count(moreRejected)} more`);
    const subject = moreRejected === 0 ? "The raise" : "This";
    const of = figures.hasRequests ? ` (out of ${count(figures.requests)} in the window)` : "";
    return `${subject} would have ${parts.join(" and ")} of ${figures.trafficWords} in ${window}${of}.`;
  }
  const opening = `Over ${window} this`;
  if (!figures.hasRequests) {
    return `No ${figures.trafficWords} was recorded in ${window}: there is nothing to compare.`;
  }
  const draftShare = formatPercent(figures.draftRejectedShare);
  const nowShare = formatPercent(figures.nowRejectedShare);
  const customers = customersWords(figures.customersAffected);
  const { moreAdmitted, moreRejected } = figures;
  if (moreAdmitted === 0 && moreRejected === 0) {
    return `${opening} would have changed no request's outcome: ${draftShare} of ${figures.trafficWords} rejected, as now.`;
  }
  if (moreRejected > 0 && moreAdmitted === 0) {
    return `${opening} would have rejected ${draftShare} of ${figures.trafficWords} (${nowShare} now), ${customers}.`;
  }
  if (moreAdmitted > 0 && moreRejected === 0) {
    return `${opening} would have admitted ${count(moreAdmitted)} more requests of ${figures.trafficWords}, rejecting ${draftShare} of it (${nowShare} now), ${customers}.`;
  }
  return `${opening} would have rejected ${draftShare} of ${figures.trafficWords} (${nowShare} now): ${count(moreRejected)} more rejected and ${count(moreAdmitted)} more admitted, ${customers}.`;
}

/** Why a backtest has nothing to say: no request was recorded in the window. */
export function describeEmptyBacktest(result: BacktestResult, windowMs: number): string {
  const window = describeBacktestWindow(windowMs);
  if (result.trust.lastRecordedMs === null) {
    return `No traffic was recorded in ${window}, so there is nothing to replay. Gateways record only when recording is on (the demo gateway's --record; the enforcer's recording option), and the worker moves the record into Postgres every few seconds.`;
  }
  return `No traffic was recorded in ${window} (the record before it is outside the window), so there is nothing to replay. Recording may be off on the gateways, or the worker has not moved the latest record yet.`;
}

/** The scope a draft incident binds as (its id is DRAFT_INCIDENT_ID of lib/control/backtest/backtest-draft.ts). */
const DRAFT_INCIDENT_SCOPE = /^incident:backtest-draft(\/|$)/;

/** The scope that binds, in words: `tier:pro`, "the raise (incident:backtest-draft)" or "no limit bound". */
export function describeBinding(scope: string | null): string {
  if (scope === null) return "no limit bound";
  return DRAFT_INCIDENT_SCOPE.test(scope) ? `the raise (${scope})` : scope;
}

/** One line of the trust panel. */
export interface TrustLine {
  readonly key: "record" | "sampling" | "gaps" | "buckets" | "fidelity";
  readonly text: string;
}

/**
 * How far to trust the estimate: what was recorded and what it stands for, the sample rates, the
 * gaps, where the buckets start, and the fidelity of the replay against the recorded decisions.
 */
export function describeBacktestTrust(result: BacktestResult): TrustLine[] {
  const { trust } = result;
  const lines: TrustLine[] = [];
  const gateways = `${formatNumber(trust.gateways)} gateway${trust.gateways === 1 ? "" : "s"}`;
  lines.push({
    key: "record",
    text:
      isSampled(result) && Math.round(trust.estimatedRequests) !== trust.recordedRequests
        ? `${formatNumber(trust.recordedRequests)} requests recorded by ${gateways}, standing for about ${formatNumber(Math.round(trust.estimatedRequests))}.`
        : `${formatNumber(trust.recordedRequests)} requests recorded by ${gateways}.`,
  });
  lines.push({
    key: "sampling",
    text: isSampled(result)
      ? `Sampled by subject at ${trust.sampleRates.map(formatPercent).join(", ")}: each sampled customer is replayed exactly, counts are scaled up and are estimates.`
      : "Every request recorded (no sampling).",
  });
  lines.push({
    key: "gaps",
    text:
      trust.gaps.length === 0
        ? "No gaps in the record."
        : `${formatNumber(trust.gaps.length)} gap${trust.gaps.length === 1 ? "" : "s"} in the record (${formatNumber(trust.dropped)} requests dropped): buckets after a gap start fuller than they were.`,
  });
  lines.push({ key: "buckets", text: `Buckets start from ${result.span.startsFrom}.` });
  lines.push({
    key: "fidelity",
    text:
      trust.fidelity.rate === null
        ? "Fidelity not checked: no replayed request was decided by the store under the policy in force."
        : `The replay of the policy in force matched ${formatPercent(trust.fidelity.rate)} of ${formatNumber(trust.fidelity.compared)} recorded decisions.`,
  });
  return lines;
}

/** The per-minute counts grouped into chart buckets, each now vs draft. */
export interface BacktestChartData {
  readonly startMs: number;
  readonly endMs: number;
  readonly bucketMs: number;
  readonly bucketStartsMs: readonly number[];
  /** Backtest buckets are all complete: the window ends at the request's time. */
  readonly partialBucketStartMs: null;
  readonly buckets: readonly {
    readonly startMs: number;
    readonly nowAdmitted: number;
    readonly nowRejected: number;
    readonly draftAdmitted: number;
    readonly draftRejected: number;
  }[];
}

/** Bucket sizes the chart may use, in minutes, smallest first. */
const BUCKET_MINUTES = [1, 5, 10, 15, 30, 60] as const;

/**
 * Groups the result's minutes into at most `maxBuckets` buckets (1, 5, 10, 15, 30 or 60 minutes,
 * the smallest that fits), summing each count. No minutes → no buckets, `startMs === endMs`.
 */
export function toBacktestChartData(
  minutes: BacktestResult["minutes"],
  maxBuckets = 150,
): BacktestChartData {
  const first = minutes[0];
  if (first === undefined) {
    return {
      startMs: 0,
      endMs: 0,
      bucketMs: MINUTE_MS,
      bucketStartsMs: [],
      partialBucketStartMs: null,
      buckets: [],
    };
  }
  const per =
    BUCKET_MINUTES.find((size) => Math.ceil(minutes.length / size) <= maxBuckets) ??
    Math.ceil(minutes.length / maxBuckets);
  const buckets: {
    startMs: number;
    nowAdmitted: number;
    nowRejected: number;
    draftAdmitted: number;
    draftRejected: number;
  }[] = [];
  minutes.forEach((minute, index) => {
    if (index % per === 0) {
      buckets.push({
        startMs: minute.minuteMs,
        nowAdmitted: 0,
        nowRejected: 0,
        draftAdmitted: 0,
        draftRejected: 0,
      });
    }
    const bucket = buckets[buckets.length - 1];
    if (bucket === undefined) return;
    bucket.nowAdmitted += minute.nowAdmitted;
    bucket.nowRejected += minute.nowRejected;
    bucket.draftAdmitted += minute.draftAdmitted;
    bucket.draftRejected += minute.draftRejected;
  });
  const bucketMs = per * MINUTE_MS;
  return {
    startMs: first.minuteMs,
    endMs: first.minuteMs + buckets.length * bucketMs,
    bucketMs,
    bucketStartsMs: buckets.map((bucket) => bucket.startMs),
    partialBucketStartMs: null,
    buckets,
  };
}
