"use client";

import { ErrorState } from "@/components/ui/error-state";

/**
 * The error boundary of an operator page (`error.tsx`). In production a server error reaches the
 * client without its message, so this says what is likely and offers a retry; the digest finds the
 * log line.
 */
export function RouteError({
  area,
  error,
  reset,
}: {
  area: string;
  error: Error & { digest?: string };
  reset: () => void;
}) {
  return (
    <>
      <header className="page-header">
        <h1>{area}</h1>
      </header>
      <ErrorState
        title={`The ${area.toLowerCase()} page could not be shown`}
        message="Either your role may not see this, or the database or Redis did not answer. Try again; if it keeps failing, check the status page."
        onRetry={reset}
        digest={error.digest}
      />
    </>
  );
}
