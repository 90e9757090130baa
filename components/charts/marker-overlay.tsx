"use client";

import { useEffect, useId, useRef, useState } from "react";
// Direct module imports, not the lib/console entry point: this is client code.
import {
  type ChartMarkerGroup,
  groupChartMarkers,
  plotFraction,
} from "@/lib/console/chart-overlays";
import { type ChartMarker, type ChartWindow, MARKER_KIND_WORDS } from "@/lib/console/chart-series";
import { Badge } from "../ui/badge";
import { LocalTime } from "../ui/local-time";
import { MARKER_COLORS } from "./chart-theme";
import { RIGHT_MARGIN_PX, Y_AXIS_WIDTH_PX } from "./time-chart";

const MIXED_COLOR = "#475569";

function colorOf(group: ChartMarkerGroup): string {
  return group.kind === "mixed" ? MIXED_COLOR : MARKER_COLORS[group.kind];
}

function accessibleName(group: ChartMarkerGroup): string {
  if (group.markers.length === 1) {
    return `Change ${group.label}: ${group.markers[0]?.label ?? ""}`;
  }
  return `Changes ${group.label}: ${group.markers.length} changes close together`;
}

/**
 * The change markers' labels laid over a time chart, as buttons: markers close in time at the
 * chart's current width share one label ("3–5"). Hovering it shows the list (CSS, app/globals.css);
 * a tap, a click or Enter keeps it open (`aria-expanded`), with links to the audit entries; Escape
 * or a tap elsewhere closes it, and focus returns to the label. Numbers match the list of changes
 * under the chart.
 */
export function MarkerOverlay({
  markers,
  window,
  widthPx,
}: {
  markers: readonly ChartMarker[];
  window: ChartWindow;
  /** The canvas's width; 0 before it is measured, when nothing is drawn. */
  widthPx: number;
}) {
  const plotWidthPx = Math.max(0, widthPx - Y_AXIS_WIDTH_PX - RIGHT_MARGIN_PX);
  const [openKey, setOpenKey] = useState<string | null>(null);
  const baseId = useId();
  const rootRef = useRef<HTMLDivElement>(null);

  // A tap or click elsewhere closes a list opened by a tap.
  useEffect(() => {
    if (openKey === null) return;
    const onPointerDown = (event: PointerEvent) => {
      if (event.target instanceof Node && rootRef.current?.contains(event.target)) return;
      setOpenKey(null);
    };
    // Escape closes the list from its button or any of its links, and focus goes to the button.
    const onKeyDown = (event: KeyboardEvent) => {
      if (event.key !== "Escape") return;
      const root = rootRef.current;
      const button = root?.querySelector<HTMLButtonElement>(`[data-group="${openKey}"]`);
      const isInside = event.target instanceof Node && root?.contains(event.target) === true;
      setOpenKey(null);
      if (isInside) button?.focus();
    };
    document.addEventListener("pointerdown", onPointerDown);
    document.addEventListener("keydown", onKeyDown);
    return () => {
      document.removeEventListener("pointerdown", onPointerDown);
      document.removeEventListener("keydown", onKeyDown);
    };
  }, [openKey]);

  if (plotWidthPx === 0 || markers.length === 0) return null;
  const groups = groupChartMarkers(markers, {
    spanMs: window.endMs - window.startMs,
    plotWidthPx,
  });

  return (
    <div className="chart-marker-overlay" ref={rootRef} data-testid="chart-marker-overlay">
      {groups.map((group) => {
        const key = String(group.firstNumber);
        const isOpen = openKey === key;
        const fraction = plotFraction(group.atMs, window);
        const leftPx = Y_AXIS_WIDTH_PX + fraction * plotWidthPx;
        const listId = `${baseId}-changes-${key}`;
        return (
          <div key={key} className="chart-marker-group" style={{ left: leftPx }}>
            <button
              type="button"
              className="chart-marker-button"
              style={{ background: colorOf(group) }}
              aria-label={accessibleName(group)}
              aria-expanded={isOpen}
              aria-controls={listId}
              data-testid="chart-marker"
              onClick={() => setOpenKey(isOpen ? null : key)}
              data-group={key}
            >
              {group.label}
            </button>
            <div
              id={listId}
              className="chart-marker-popover"
              data-align={fraction > 0.5 ? "right" : "left"}
              hidden={!isOpen}
            >
              <ol start={group.firstNumber} aria-label={`Changes ${group.label}`}>
                {group.markers.map((marker) => (
                  <li key={marker.auditEntryId}>
                    <Badge tone={MARKER_KIND_WORDS[marker.kind].tone}>
                      {MARKER_KIND_WORDS[marker.kind].short}
                    </Badge>{" "}
                    <LocalTime at={marker.atMs} short /> <a href={marker.href}>{marker.label}</a>
                  </li>
                ))}
              </ol>
            </div>
          </div>
        );
      })}
    </div>
  );
}
