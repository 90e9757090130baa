import type { ReactNode } from "react";

/**
 * A region that scrolls sideways (a wide table on a phone) and that a keyboard can reach: it
 * takes focus (`tabIndex=0`), so arrow keys scroll it, and is named for screen readers (axe's
 * `scrollable-region-focusable`). Only its content scrolls; the page never does.
 */
export function ScrollRegion({
  label,
  className = "table-scroll",
  children,
}: {
  /** What the region holds, e.g. the table's caption. */
  label: string;
  /** @default "table-scroll" */
  className?: string;
  children: ReactNode;
}) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must be reachable by keyboard to be scrolled
    <section className={className} tabIndex={0} aria-label={label}>
      {children}
    </section>
  );
}
