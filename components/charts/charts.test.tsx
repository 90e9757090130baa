import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import {
  buildChartMarkers,
  buildDryRunSeries,
  buildRejectionRateSeries,
  CHART_RANGES,
} from "@/lib/console/chart-series";
import { MINUTE_MS } from "@/lib/control";
import { DryRunChart } from "./dry-run-chart";
import { MarkerOverlay } from "./marker-overlay";
import { RejectionChart } from "./rejection-chart";

const NOW_MS = Date.UTC(2025, 2, 4, 12, 7, 30);
const LAST_MINUTE = Date.UTC(2025, 2, 4, 12, 6);
const range = CHART_RANGES["15m"];

describe("RejectionChart", () => {
  it("with no traffic shows an empty state, not an empty chart, and still lists the changes", () => {
    const data = buildRejectionRateSeries([], range, { nowMs: NOW_MS });
    const markers = buildChartMarkers(
      [{ atMs: LAST_MINUTE, auditEntryId: "42", action: "tier.update" }],
      data,
    );
    const html = renderToStaticMarkup(
      <RejectionChart data={data} markers={markers} title="Rejection rate" />,
    );
    expect(html).toContain("No traffic in this range");
    expect(html).toContain("No scope evaluated a request in the 15 min shown");
    expect(html).toContain('href="/audit?entry=42"');
  });

  it("on the server: a placeholder for the drawing, and the whole chart as text and a table", () => {
    const data = buildRejectionRateSeries(
      [
        { scope: "tier:free", minuteStartMs: LAST_MINUTE, allowed: 0, rejected: 100 },
        { scope: "tier:free", minuteStartMs: LAST_MINUTE - MINUTE_MS, allowed: 98, rejected: 2 },
      ],
      range,
      { nowMs: NOW_MS },
    );
    const markers = buildChartMarkers(
      [{ atMs: LAST_MINUTE, auditEntryId: "7", action: "incident.raise", label: "<b>raise</b>" }],
      data,
    );
    const html = renderToStaticMarkup(
      <RejectionChart data={data} markers={markers} title="Rejection rate" />,
    );
    expect(html).toContain("Drawing Rejection rate…");
    expect(html).not.toContain("recharts-surface");
    expect(html).toContain("<code>tier:free</code>: 51% of 200 requests rejected; highest 100% at");
    expect(html).toContain('<a href="/audit?entry=7">&lt;b&gt;raise&lt;/b&gt;</a>');
    expect(html).toContain("incident override");
    // Fifteen rows, thirteen of them without traffic: said, not shown as 0%.
    expect(html.match(/no traffic/g)).toHaveLength(13);
    expect(html).toContain('title="2 of 100 rejected">2%</span>');
  });

  it("names the scopes it left out", () => {
    const rows = ["a", "b", "c"].map((name, i) => ({
      scope: `tier:${name}`,
      minuteStartMs: LAST_MINUTE,
      allowed: 10,
      rejected: i,
    }));
    const data = buildRejectionRateSeries(rows, range, { nowMs: NOW_MS, maxScopes: 2 });
    expect(renderToStaticMarkup(<RejectionChart data={data} title="t" />)).toContain(
      "1 more scope with fewer rejections not drawn: tier:a.",
    );
  });
});

describe("DryRunChart", () => {
  const pairs = [
    { enforcedScope: "tier:free", dryRunScope: "candidate:c1", label: "Stricter free" },
  ];

  it("says blocked and would-block totals in words", () => {
    const data = buildDryRunSeries(
      [
        { scope: "tier:free", minuteStartMs: LAST_MINUTE, allowed: 95, rejected: 5 },
        {
          scope: "candidate:c1",
          minuteStartMs: LAST_MINUTE,
          allowed: 60,
          rejected: 0,
          wouldReject: 40,
        },
      ],
      range,
      { nowMs: NOW_MS, pairs },
    );
    const html = renderToStaticMarkup(<DryRunChart data={data} title="Dry-run" />);
    expect(html).toContain("Blocked 5 of 100 requests (5%); would block 40 of 100 (40%).");
    expect(html).toContain("<strong>Stricter free</strong>");
  });

  it("given the compared span, says the page's comparison instead of one over the whole window, and shades the rest", () => {
    const data = buildDryRunSeries(
      [
        { scope: "tier:free", minuteStartMs: LAST_MINUTE, allowed: 95, rejected: 5 },
        {
          scope: "candidate:c1",
          minuteStartMs: LAST_MINUTE,
          allowed: 60,
          wouldReject: 40,
          rejected: 0,
        },
      ],
      range,
      { nowMs: NOW_MS, pairs },
    );
    const html = renderToStaticMarkup(
      <DryRunChart
        data={data}
        title="Dry-run"
        compared={{ startMs: LAST_MINUTE, summary: "Over the span the totals state." }}
      />,
    );
    expect(html).toContain("Over the span the totals state.");
    expect(html).not.toContain("Blocked 5 of 100");
    expect(html).toContain("Shaded: minutes before the compared span, not in the totals");
    // A span that starts with the window leaves nothing to shade.
    const whole = renderToStaticMarkup(
      <DryRunChart
        data={data}
        title="Dry-run"
        compared={{ startMs: data.startMs, summary: "x" }}
      />,
    );
    expect(whole).not.toContain("Shaded:");
  });

  it("lists the marked creation and changes with links to their audit entries, even without traffic", () => {
    const data = buildDryRunSeries([], range, { nowMs: NOW_MS, pairs });
    const markers = buildChartMarkers(
      [
        { atMs: LAST_MINUTE, auditEntryId: "7", action: "candidate.create", label: "c1 created" },
        {
          atMs: LAST_MINUTE + 1,
          auditEntryId: "8",
          action: "candidate.update",
          label: "c1 changed",
        },
      ],
      data,
    );
    const html = renderToStaticMarkup(
      <DryRunChart data={data} title="Dry-run" markers={markers} />,
    );
    expect(html).toContain("No traffic yet");
    expect(html).toContain('<a href="/audit?entry=7">c1 created</a>');
    expect(html).toContain('<a href="/audit?entry=8">c1 changed</a>');
  });

  it("has empty states for no candidates and for no traffic", () => {
    const none = buildDryRunSeries([], range, { nowMs: NOW_MS, pairs: [] });
    expect(renderToStaticMarkup(<DryRunChart data={none} title="Dry-run" />)).toContain(
      "No dry-run candidates",
    );
    const quiet = buildDryRunSeries([], range, { nowMs: NOW_MS, pairs });
    expect(renderToStaticMarkup(<DryRunChart data={quiet} title="Dry-run" />)).toContain(
      "No traffic yet",
    );
  });
});

describe("the partial current minute", () => {
  it("is drawn apart: named in the legend and marked in the numbers", () => {
    const data = buildRejectionRateSeries(
      [
        { scope: "tier:free", minuteStartMs: LAST_MINUTE, allowed: 90, rejected: 10 },
        { scope: "tier:free", minuteStartMs: LAST_MINUTE + MINUTE_MS, allowed: 3, rejected: 0 },
      ],
      range,
      { nowMs: NOW_MS, includeCurrentBucket: true },
    );
    const html = renderToStaticMarkup(<RejectionChart data={data} title="Rejection rate" />);
    expect(html).toContain("Dotted at the right edge: the current minute, still counting");
    expect(html.match(/\(still counting\)/g)).toHaveLength(1);
  });

  it("is not mentioned when every minute is complete", () => {
    const data = buildRejectionRateSeries(
      [{ scope: "tier:free", minuteStartMs: LAST_MINUTE, allowed: 90, rejected: 10 }],
      range,
      { nowMs: NOW_MS },
    );
    const html = renderToStaticMarkup(<RejectionChart data={data} title="Rejection rate" />);
    expect(html).not.toContain("still counting");
  });
});

describe("MarkerOverlay", () => {
  const hour = CHART_RANGES["1h"];
  const data = buildRejectionRateSeries([], hour, { nowMs: NOW_MS });
  // Two pairs a few seconds apart and one alone: the review's overlapping 1/2 and 3/4.
  const markers = buildChartMarkers(
    [
      { atMs: data.endMs - 50 * MINUTE_MS, auditEntryId: "11", action: "tier.update" },
      { atMs: data.endMs - 50 * MINUTE_MS + 20_000, auditEntryId: "12", action: "incident.raise" },
      { atMs: data.endMs - 30 * MINUTE_MS, auditEntryId: "13", action: "tier.update" },
      { atMs: data.endMs - 5 * MINUTE_MS, auditEntryId: "14", action: "incident.raise" },
      { atMs: data.endMs - 5 * MINUTE_MS + 5_000, auditEntryId: "15", action: "incident.revert" },
    ],
    data,
  );

  function labels(html: string): string[] {
    return [...html.matchAll(/data-testid="chart-marker"[^>]*>([^<]+)</g)].map((m) => m[1] ?? "");
  }

  it("groups close markers into one keyboard-reachable button each, at 1280 and at 390 px", () => {
    const laptop = renderToStaticMarkup(
      <MarkerOverlay markers={markers} window={data} widthPx={1240} />,
    );
    expect(labels(laptop)).toEqual(["1–2", "3", "4–5"]);
    const phone = renderToStaticMarkup(
      <MarkerOverlay markers={markers} window={data} widthPx={350} />,
    );
    expect(labels(phone)).toEqual(["1–2", "3", "4–5"]);
    expect(phone).toContain('aria-label="Changes 1–2: 2 changes close together"');
    expect(phone).toContain('aria-label="Change 3: tier.update"');
    expect(phone.match(/<button type="button"/g)).toHaveLength(3);
    expect(phone.match(/aria-expanded="false"/g)).toHaveLength(3);
  });

  it("holds each group's list, closed until asked for, linking every change", () => {
    const html = renderToStaticMarkup(
      <MarkerOverlay markers={markers} window={data} widthPx={350} />,
    );
    expect(html.match(/hidden=""/g)).toHaveLength(3);
    for (const id of ["11", "12", "13", "14", "15"]) {
      expect(html).toContain(`href="/audit?entry=${id}"`);
    }
    expect(html).toContain('<ol start="4" aria-label="Changes 4–5">');
  });

  it("draws nothing before the canvas is measured", () => {
    expect(
      renderToStaticMarkup(<MarkerOverlay markers={markers} window={data} widthPx={0} />),
    ).toBe("");
  });
});
