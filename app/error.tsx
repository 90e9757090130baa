"use client";

import { ErrorState } from "@/components/ui/error-state";
import { DATABASE_UNAVAILABLE_DIGEST, DATABASE_UNAVAILABLE_MESSAGE } from "@/lib/console/outage";

/**
 * The last error boundary inside the root layout: what no page's own `error.tsx` caught. Outside
 * the shell (the shell may be what failed), with the way to the status page.
 */
export default function RootError({
  error,
  reset,
}: {
  error: Error & { digest?: string };
  reset: () => void;
}) {
  const isOutage = error.digest === DATABASE_UNAVAILABLE_DIGEST;
  return (
    <main className="sign-in">
      <div className="sign-in-card panel">
        <h1>{isOutage ? "The database is unreachable" : "Something went wrong"}</h1>
        <ErrorState
          title={isOutage ? "The console cannot work without its database" : "This page failed"}
          message={
            <>
              {isOutage
                ? DATABASE_UNAVAILABLE_MESSAGE
                : "The control plane could not show this page. Try again; if it keeps failing, check the status page."}{" "}
              <a href="/status">Status</a>
            </>
          }
          onRetry={reset}
          digest={isOutage ? undefined : error.digest}
        />
      </div>
    </main>
  );
}
