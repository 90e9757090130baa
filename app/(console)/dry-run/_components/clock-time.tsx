"use client";

import { useIsMounted } from "@/components/charts/use-is-mounted";
// Direct module imports, not the lib/console entry point: this is client code.
import {
  formatClockTime,
  formatLocalTimestamp,
  formatUtcClockTime,
  toIsoString,
} from "@/lib/console/format";

/**
 * A time of day inside a sentence ("from 14:04 CET"), in the viewer's zone once mounted; the
 * server (and hydration) says it in UTC, with "UTC", so the two renders match. The full local time and
 * the ISO form are on hover.
 */
export function ClockTime({
  atMs,
  withSeconds = false,
  withWeekday = false,
}: {
  atMs: number;
  /** @default false */
  withSeconds?: boolean;
  /** For spans longer than a day's hours. @default false */
  withWeekday?: boolean;
}) {
  const isMounted = useIsMounted();
  const iso = toIsoString(atMs);
  if (iso === null) return <span className="muted">unknown time</span>;
  const options = { withSeconds, withWeekday };
  // The server (and hydration) says it in UTC; the viewer's own zone once mounted.
  const text = isMounted ? formatClockTime(atMs, options) : formatUtcClockTime(atMs, options);
  return (
    <time dateTime={iso} title={isMounted ? `${formatLocalTimestamp(atMs)} (${iso})` : iso}>
      {text}
    </time>
  );
}
