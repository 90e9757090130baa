import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import {
  detectExpiringIncidents,
  detectRejectionRateAlerts,
  MINUTE_MS,
  type ScopeMinuteCount,
} from "@/lib/control";
import { AlertList } from "./alert-list";

const NOW_MS = Date.UTC(2025, 2, 4, 12, 0, 30);

describe("AlertList", () => {
  it("shows a rate change and an expiring override in words, with a live countdown", () => {
    const rows: ScopeMinuteCount[] = [];
    for (let i = 65; i > 0; i--) {
      const isRecent = i <= 5;
      rows.push({
        scope: "tier:free",
        minuteStartMs: Date.UTC(2025, 2, 4, 12) - i * MINUTE_MS,
        allowed: isRecent ? 0 : 98,
        rejected: isRecent ? 100 : 2,
      });
    }
    const alerts = [
      ...detectRejectionRateAlerts(rows, { nowMs: NOW_MS }),
      ...detectExpiringIncidents(
        [
          {
            id: "inc-1",
            customerId: "acme",
            endpointClass: "reports",
            expiresAt: new Date(NOW_MS + 5 * MINUTE_MS).toISOString(),
          },
        ],
        { nowMs: NOW_MS },
      ),
    ];
    const html = renderToStaticMarkup(<AlertList alerts={alerts} nowMs={NOW_MS} />);
    expect(html).toContain("rejections up");
    expect(html).toContain("2% → 100% (+98 pts)");
    expect(html).toContain("override expiring");
    expect(html).toContain(" on reports");
    expect(html).toContain(">5 min left</time>");
    expect(html).toContain('href="/overrides?incident=inc-1"');
    expect(html).toContain("Extend or revert");
    const forViewer = renderToStaticMarkup(
      <AlertList alerts={alerts} nowMs={NOW_MS} canChange={false} />,
    );
    expect(forViewer).not.toContain("Extend or revert");
    expect(forViewer).toContain(">View the override</a>");
  });

  it("renders nothing without alerts", () => {
    expect(renderToStaticMarkup(<AlertList alerts={[]} nowMs={NOW_MS} />)).toBe("");
  });
});
