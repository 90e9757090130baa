"use client";

import { ErrorState } from "@/components/ui/error-state";

/** Anything below /dry-run that failed to load. The details are in the server log. */
export default function DryRunError({
  error,
  reset,
}: {
  error: Error & { digest?: string };
  reset: () => void;
}) {
  return (
    <ErrorState
      title="The dry-run candidates could not be loaded"
      message="The database or Redis may be unreachable; the status page says which. Try again in a moment."
      onRetry={reset}
      digest={error.digest}
    />
  );
}
