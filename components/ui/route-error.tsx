"use client";

import { ErrorState } from "@/components/ui/error-state";

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
 * log line.
 */
export function RouteError({ area, error, reset, title, message }: RouteErrorProps) {
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
