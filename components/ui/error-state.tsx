import type { ReactNode } from "react";

export interface ErrorStateProps {
  /** @default "Something went wrong" */
  title?: string;
  /** What happened and what to do, for a person: never a stack trace or an internal message. */
  message: ReactNode;
  /**
   * Retry in place, for client error boundaries (`error.tsx` passes its `reset`). Only a client
   * component can pass a function; a server component uses `retryHref`.
   */
  onRetry?: () => void;
  /** Retry by reloading a page, for server components. */
  retryHref?: string;
  /** Next.js's error digest, so an operator can quote it and the log line can be found. */
  digest?: string;
}

/**
 * An error, said plainly, with a way to retry. No "use client": it renders in server components
 * (with `retryHref`) and inside client boundaries (with `onRetry`).
 */
export function ErrorState({
  title = "Something went wrong",
  message,
  onRetry,
  retryHref,
  digest,
}: ErrorStateProps) {
  return (
    <div className="error-state" role="alert">
      <p className="error-state-title">{title}</p>
      <div className="error-state-message">{message}</div>
      {digest ? <p className="muted small">Reference: {digest}</p> : null}
      {onRetry || retryHref ? (
        <div className="error-state-actions">
          {onRetry ? (
            <button type="button" className="button" onClick={onRetry}>
              Try again
            </button>
          ) : (
            <a className="button" href={retryHref}>
              Try again
            </a>
          )}
        </div>
      ) : null}
    </div>
  );
}
