"use client";

import { ErrorState } from "@/components/ui/error-state";
import { DATABASE_UNAVAILABLE_DIGEST, DATABASE_UNAVAILABLE_MESSAGE } from "@/lib/console/outage";

export interface RouteErrorProps {
  /** The page's heading, kept so the operator still knows where they are. */
  readonly area: string;
  readonly error: Error & { digest?: string };
  readonly reset: () => void;
  /** @default "The <area> page could not be shown" */
  readonly title?: string;
  /** What is likely wrong and what to do. */
  readonly message?: string;
}

const DEFAULT_MESSAGE =
  "Either your role may not see this, or the database or Redis did not answer. Try again; if it keeps failing, check the status page.";

/**
 * The error boundary of a console page (`error.tsx`). In production a server error reaches the
 * client without its message, so this says what is likely and offers a retry; the digest finds the
 * log line. A database outage carries a digest of its own (lib/console/outage.ts) and is said as
 * such.
 */
export function RouteError({ area, error, reset, title, message }: RouteErrorProps) {
  if (error.digest === DATABASE_UNAVAILABLE_DIGEST) {
    return (
      <>
        <header className="page-header">
          <h1>{area}</h1>
        </header>
        <ErrorState
          title="The database is unreachable"
          message={DATABASE_UNAVAILABLE_MESSAGE}
          onRetry={reset}
        />
      </>
    );
  }
  return (
    <>
      <header className="page-header">
        <h1>{area}</h1>
      </header>
      <ErrorState
        title={title ?? `The ${area.toLowerCase()} page could not be shown`}
        message={message ?? DEFAULT_MESSAGE}
        onRetry={reset}
        digest={error.digest}
      />
    </>
  );
}
