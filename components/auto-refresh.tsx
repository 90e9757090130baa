"use client";

import { useRouter } from "next/navigation";
import { useEffect, useState } from "react";
// Direct module imports, not the lib/console entry point: this is client code.
import { formatClockTime } from "@/lib/console/format";

/**
 * Re-renders the server components of the current page every `intervalMs`, so a status view stays
 * live without a client-side copy of its data. Pauses while the tab is hidden.
 */
export function AutoRefresh({ intervalMs = 5_000 }: { intervalMs?: number }) {
  const router = useRouter();
  const [lastRefreshAtMs, setLastRefreshAtMs] = useState<number | null>(null);
  useEffect(() => {
    const timer = setInterval(() => {
      if (document.visibilityState !== "visible") return;
      router.refresh();
      setLastRefreshAtMs(Date.now());
    }, intervalMs);
    return () => clearInterval(timer);
  }, [router, intervalMs]);
  return (
    <span className="muted small" aria-live="off">
      Live: refreshes every {Math.round(intervalMs / 1000)} s
      {lastRefreshAtMs === null
        ? ""
        : ` (last ${formatClockTime(lastRefreshAtMs, { withSeconds: true })})`}
    </span>
  );
}
