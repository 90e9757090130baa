"use client";

import { useEffect, useState } from "react";
// Direct module imports, not the lib/console entry point: this is client code.
import { timestampLabel, toEpochMs } from "@/lib/console/format";

export interface LocalTimeProps {
  /** The instant: an ISO 8601 string, milliseconds since the epoch, or a `Date`. */
  at: string | number | Date;
  /**
   * Say how long ago ("3 min ago") when recent; the absolute time stays on hover.
   * @default false
   */
  relative?: boolean;
  /**
   * How recent a time must be to be said relatively.
   * @default 86_400_000 (1 day)
   */
  relativeWithinMs?: number;
  /**
   * Weekday and time only ("Tue 14:05"), for tables and legends; the full time stays on hover.
   * @default false
   */
  short?: boolean;
  className?: string;
}

/** How often a relative time is refreshed. */
const RELATIVE_REFRESH_MS = 30_000;

/**
 * A timestamp in the operator's own time zone, with the absolute ISO time on hover and in
 * `<time dateTime>`. The server (and the first client render) shows UTC, identical on both sides,
 * so hydration never mismatches; the local text replaces it once mounted.
 */
export function LocalTime({
  at,
  relative = false,
  relativeWithinMs,
  short = false,
  className,
}: LocalTimeProps) {
  const atMs = toEpochMs(at) ?? Number.NaN;
  const [nowMs, setNowMs] = useState<number | null>(null);

  useEffect(() => {
    setNowMs(Date.now());
    if (!relative) return;
    const timer = setInterval(() => setNowMs(Date.now()), RELATIVE_REFRESH_MS);
    return () => clearInterval(timer);
  }, [relative]);

  const label = timestampLabel(atMs, { nowMs, relative, relativeWithinMs, short });
  if (label.iso === null) return <span className="muted">{label.text}</span>;
  return (
    <time dateTime={label.iso} title={label.title} className={className}>
      {label.text}
    </time>
  );
}
