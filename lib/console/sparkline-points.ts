/**
 * A sparkline's polyline: values spread evenly across `widthPx`, 0 at the bottom and the largest at
 * the top of `heightPx` (inset by half the stroke so the line is never clipped). Pure.
 */
export function sparklinePoints(
  values: readonly number[],
  widthPx: number,
  heightPx: number,
  strokePx = 1.5,
): string {
  if (values.length === 0) return "";
  const inset = strokePx / 2;
  const max = Math.max(...values.map((value) => (Number.isFinite(value) ? value : 0)), 0);
  const usableHeight = heightPx - 2 * inset;
  const step = values.length === 1 ? 0 : (widthPx - 2 * inset) / (values.length - 1);
  return values
    .map((raw, index) => {
      const value = Number.isFinite(raw) && raw > 0 ? raw : 0;
      const x = values.length === 1 ? widthPx / 2 : inset + index * step;
      const y = max === 0 ? heightPx - inset : inset + usableHeight * (1 - value / max);
      return `${round(x)},${round(y)}`;
    })
    .join(" ");
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}
