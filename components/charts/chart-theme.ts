/**
 * Colours and dash patterns for chart lines. Each series differs in dash as well as colour, so the
 * lines stay apart for colour-blind operators and in greyscale screenshots. Values match the
 * palette in app/globals.css.
 */
export const SERIES_STYLES: readonly { readonly stroke: string; readonly dash: string }[] = [
  { stroke: "#2550c9", dash: "" },
  { stroke: "#b42318", dash: "6 3" },
  { stroke: "#1f7a3f", dash: "2 3" },
  { stroke: "#9a6400", dash: "8 3 2 3" },
  { stroke: "#7a3fb0", dash: "" },
  { stroke: "#0e7490", dash: "6 3" },
  { stroke: "#c2410c", dash: "2 3" },
  { stroke: "#475569", dash: "8 3 2 3" },
];

export function seriesStyle(index: number): { readonly stroke: string; readonly dash: string } {
  return SERIES_STYLES[index % SERIES_STYLES.length] ?? { stroke: "#2550c9", dash: "" };
}

export const MARKER_COLORS = {
  "policy-change": "#2550c9",
  "incident-override": "#9a6400",
  "redis-failover": "#b42318",
} as const;

export const BLOCKED_STYLE = { stroke: "#b42318", dash: "" } as const;
export const WOULD_BLOCK_STYLE = { stroke: "#9a6400", dash: "6 3" } as const;
