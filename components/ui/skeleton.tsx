export interface SkeletonProps {
  /** Placeholder lines. @default 3 */
  lines?: number;
  /** What is loading, for screen readers. @default "Loading" */
  label?: string;
}

/** Placeholder lines while text loads (`loading.tsx`). Announced once as busy, not read out. */
export function Skeleton({ lines = 3, label = "Loading" }: SkeletonProps) {
  return (
    <div className="skeleton-block" aria-busy="true">
      <span className="visually-hidden" role="status">
        {label}…
      </span>
      {Array.from({ length: Math.max(1, lines) }, (_, index) => (
        // Widths vary so the placeholder reads as text, not as a grid.
        <div
          // biome-ignore lint/suspicious/noArrayIndexKey: static placeholders, never reordered
          key={index}
          className="skeleton"
          aria-hidden="true"
          style={{ width: `${[100, 92, 76, 84, 60][index % 5]}%` }}
        />
      ))}
    </div>
  );
}

export interface SkeletonTableProps {
  /** @default 5 */
  rows?: number;
  /** @default 4 */
  columns?: number;
  /** @default "Loading" */
  label?: string;
}

/** Placeholder for a table while it loads. */
export function SkeletonTable({ rows = 5, columns = 4, label = "Loading" }: SkeletonTableProps) {
  const columnKeys = Array.from({ length: Math.max(1, columns) }, (_, i) => `c${i}`);
  return (
    <div className="skeleton-block" aria-busy="true">
      <span className="visually-hidden" role="status">
        {label}…
      </span>
      <table className="data" aria-hidden="true">
        <tbody>
          {Array.from({ length: Math.max(1, rows) }, (_, row) => `r${row}`).map((rowKey) => (
            <tr key={rowKey}>
              {columnKeys.map((columnKey) => (
                <td key={columnKey}>
                  <div className="skeleton" />
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export interface SkeletonChartProps {
  /** Pixels; match the chart it stands in for so nothing jumps. @default 280 */
  height?: number;
  /** @default "Loading chart" */
  label?: string;
}

/** Placeholder the size of a chart. */
export function SkeletonChart({ height = 280, label = "Loading chart" }: SkeletonChartProps) {
  return (
    <div className="skeleton-block" aria-busy="true">
      <span className="visually-hidden" role="status">
        {label}…
      </span>
      <div className="skeleton skeleton-chart" aria-hidden="true" style={{ height }} />
    </div>
  );
}
