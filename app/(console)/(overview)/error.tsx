"use client";

import { ErrorState } from "@/components/ui/error-state";

/** The overview failed as a whole (each panel handles its own read failures). */
export default function OverviewError({
  error,
  reset,
}: {
  error: Error & { digest?: string };
  reset: () => void;
}) {
  return (
    <>
      <header className="page-header">
        <h1>Overview</h1>
      </header>
      <ErrorState
        title="The overview could not be shown"
        message="The control plane could not build this page just now, or your role may not read metrics. Try again; if it keeps failing, check the status page."
        onRetry={reset}
        digest={error.digest}
      />
    </>
  );
}
