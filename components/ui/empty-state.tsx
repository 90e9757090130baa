import type { ReactNode } from "react";

export interface EmptyStateProps {
  /** What is empty, in a few words: "No audit entries match these filters". */
  title: string;
  /** Why, or what to do next. */
  children?: ReactNode;
  /** A link or button that helps, e.g. clearing the filters. */
  action?: ReactNode;
}

/** What a list, chart or page shows when there is nothing to show, said plainly. */
export function EmptyState({ title, children, action }: EmptyStateProps) {
  return (
    <div className="empty">
      <p className="empty-title">{title}</p>
      {children ? <div className="empty-body">{children}</div> : null}
      {action ? <div className="empty-action">{action}</div> : null}
    </div>
  );
}
