import type { ReactNode } from "react";

export type BadgeTone = "ok" | "bad" | "warn" | "info" | "muted";

export interface BadgeProps {
  /** @default "muted" */
  tone?: BadgeTone;
  /** Show a dot before the text, for a status. @default false */
  dot?: boolean;
  title?: string;
  children: ReactNode;
}

/** A short status or category label. The tone is never the only signal: the text says it too. */
export function Badge({ tone = "muted", dot = false, title, children }: BadgeProps) {
  return (
    <span className={`badge badge-${tone}`} title={title}>
      {dot ? <span className="dot" aria-hidden="true" /> : null}
      {children}
    </span>
  );
}
