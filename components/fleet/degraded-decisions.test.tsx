import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { detectDegradedDecisions } from "@/lib/control";
import { DegradedCell, type DegradedReport, FleetDegradedSummary } from "./degraded-decisions";

const healthy: DegradedReport = {
  id: "gw-1",
  breakerState: "closed",
  decisionsWithoutStore: { storeError: 0, timeout: 0, circuitOpen: 0 },
};
const degraded: DegradedReport = {
  id: "gw-2",
  breakerState: "open",
  decisionsWithoutStore: { storeError: 1200, timeout: 34, circuitOpen: 5 },
};
const NOW_MS = Date.UTC(2026, 0, 15, 10, 0, 30);

describe("DegradedCell", () => {
  it("says none for a gateway that always had Redis", () => {
    expect(renderToStaticMarkup(<DegradedCell report={healthy} />)).toBe(
      '<span class="muted">none</span>',
    );
  });

  it("counts a gateway's decisions without Redis by why, and says when it is deciding without Redis now", () => {
    const html = renderToStaticMarkup(<DegradedCell report={degraded} />);
    expect(html).toContain('data-count="1239"');
    expect(html).toContain("deciding without Redis now");
    expect(html).toContain("1,239 since start");
    expect(html).toContain("(1,200 Redis down or refusing, 34 no answer in time, 5 breaker open)");
  });

  it("leaves out the reasons with no decisions", () => {
    const html = renderToStaticMarkup(
      <DegradedCell
        report={{
          ...healthy,
          decisionsWithoutStore: { storeError: 0, timeout: 7, circuitOpen: 0 },
        }}
      />,
    );
    expect(html).toContain("(7 no answer in time)");
    expect(html).not.toContain("now");
  });
});

describe("FleetDegradedSummary", () => {
  it("renders nothing for a healthy fleet without an alert", () => {
    expect(renderToStaticMarkup(<FleetDegradedSummary reports={[healthy]} alert={null} />)).toBe(
      "",
    );
  });

  it("names how many gateways decided without Redis, and the alert the worker raises", () => {
    const [alert] = detectDegradedDecisions(
      [
        {
          minuteStartMs: NOW_MS - 30_000,
          decisions: 1000,
          withoutStore: { storeError: 120, timeout: 0, circuitOpen: 0 },
        },
      ],
      { nowMs: NOW_MS },
    );
    expect(alert).toBeDefined();
    const html = renderToStaticMarkup(
      <FleetDegradedSummary reports={[healthy, degraded]} alert={alert ?? null} />,
    );
    expect(html).toContain("120 in the last two minutes (12.0 % of the fleet&#x27;s)");
    expect(html).toContain("1 of 2 gateways have decided without Redis since they started");
    expect(html).toContain("1 is doing so now (breaker open)");
  });
});
