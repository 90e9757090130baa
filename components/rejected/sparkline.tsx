import { sparklinePoints } from "@/lib/console/sparkline-points";
import styles from "./rejected.module.css";

export interface SparklineProps {
  /** Oldest first. */
  readonly values: readonly number[];
  /** What the line shows, read by screen readers ("rejections per minute, last hour"). */
  readonly label: string;
  /** @default 96 */
  readonly widthPx?: number;
  /** @default 24 */
  readonly heightPx?: number;
}

/** A small line of counts over time, drawn on the server (no client code). */
export function Sparkline({ values, label, widthPx = 96, heightPx = 24 }: SparklineProps) {
  const max = Math.max(0, ...values);
  return (
    <svg
      width={widthPx}
      height={heightPx}
      viewBox={`0 0 ${widthPx} ${heightPx}`}
      role="img"
      aria-label={`${label}: peak ${max}`}
      className={styles.sparkline}
    >
      <polyline
        points={sparklinePoints(values, widthPx, heightPx)}
        fill="none"
        stroke="currentColor"
        strokeWidth={1.5}
        strokeLinejoin="round"
      />
    </svg>
  );
}
