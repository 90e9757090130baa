"use client";

import { useEffect, useState } from "react";
import { formatCountdown, formatUtcTimestamp, toEpochMs, toIsoString } from "@/lib/console/format";

export interface CountdownProps {
  /** When it ends: an ISO 8601 string, milliseconds since the epoch, or a `Date`. */
  expiresAt: string | number | Date;
  /**
   * The server's clock when it rendered. With it, the server and the first client render show the
   * same remaining time (so hydration matches) and the count starts at once; without it they show
   * the UTC expiry until mounted.
   */
  serverNowMs?: number;
  className?: string;
}

const TICK_MS = 1000;

/**
 * Time left until an expiry ("14 min 32 s left"), updated every second, saying "expired" at
 * zero. Screen readers are not interrupted every second (`aria-live="off"`); the expiry instant
 * is in `dateTime` and on hover.
 */
export function Countdown({ expiresAt, serverNowMs, className }: CountdownProps) {
  const expiresAtMs = toEpochMs(expiresAt);
  const [nowMs, setNowMs] = useState<number | null>(serverNowMs ?? null);

  useEffect(() => {
    if (expiresAtMs === null) return;
    const tick = () => setNowMs(Date.now());
    tick();
    const timer = setInterval(() => {
      tick();
      if (Date.now() >= expiresAtMs) clearInterval(timer);
    }, TICK_MS);
    return () => clearInterval(timer);
  }, [expiresAtMs]);

  const iso = expiresAtMs === null ? null : toIsoString(expiresAtMs);
  if (expiresAtMs === null || iso === null) return <span className="muted">unknown expiry</span>;
  const remainingMs = nowMs === null ? null : expiresAtMs - nowMs;
  const isExpired = remainingMs !== null && remainingMs <= 0;
  const text =
    remainingMs === null
      ? `until ${formatUtcTimestamp(expiresAtMs)}`
      : isExpired
        ? "expired"
        : `${formatCountdown(remainingMs)} left`;
  return (
    <time
      dateTime={iso}
      title={`Expires ${iso}`}
      role="timer"
      aria-live="off"
      className={["countdown", isExpired ? "countdown-expired" : "", className ?? ""]
        .filter(Boolean)
        .join(" ")}
    >
      {text}
    </time>
  );
}
