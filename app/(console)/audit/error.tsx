"use client";

import { ErrorState } from "@/components/ui/error-state";

/** The audit log could not be read (the database is unreachable, or the role may not read it). */
export default function AuditError({
  error,
  reset,
}: {
  error: Error & { digest?: string };
  reset: () => void;
}) {
  return (
    <>
      <header className="page-header">
        <h1>Audit log</h1>
      </header>
      <ErrorState
        title="The audit log could not be shown"
        message="The control plane could not read the audit log just now, or your role may not read it. Try again; if it keeps failing, check the status page."
        onRetry={reset}
        digest={error.digest}
      />
    </>
  );
}
