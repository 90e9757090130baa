"use client";

import { useIsMounted } from "@/components/charts/use-is-mounted";
// Direct module imports, not the lib/console entry point: this is client code.
import { formatLocalTimestamp, toIsoString } from "@/lib/console/format";

const UTC_WEEKDAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"] as const;

/**
 * A time of day inside a sentence ("from 14:04"), in the viewer's zone once mounted; the server
 * (and hydration) says it in UTC, with "UTC", so the two renders match. The full local time and
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
  const parts: Intl.DateTimeFormatOptions = {
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
    ...(withSeconds ? { second: "2-digit" } : {}),
    ...(withWeekday ? { weekday: "short" } : {}),
  };
  // The UTC text is cut from the ISO form, not Intl: the server's and the browser's Intl data may
  // differ, and hydration must see the same text.
  const utc = `${withWeekday ? `${UTC_WEEKDAYS[new Date(atMs).getUTCDay()]} ` : ""}${iso.slice(11, withSeconds ? 19 : 16)} UTC`;
  const text = isMounted ? new Intl.DateTimeFormat(undefined, parts).format(atMs) : utc;
  return (
    <time dateTime={iso} title={isMounted ? `${formatLocalTimestamp(atMs)} (${iso})` : iso}>
      {text}
    </time>
  );
}
