import Link from "next/link";
import type { PageLinks } from "@/lib/console/page-links";

export interface PagerProps {
  /** From `buildPageLinks`: the filters are already in them. */
  links: PageLinks;
  /** Names the navigation for screen readers. @default "Pages" */
  label?: string;
}

/**
 * Newest / newer / older links for a keyset-paged list (newest first). A direction with nothing
 * more is shown disabled, not hidden, so the controls do not move; with nothing in any direction
 * the pager is not shown.
 */
export function Pager({ links, label = "Pages" }: PagerProps) {
  if (links.nextHref === null && links.previousHref === null && links.firstHref === null) {
    return null;
  }
  return (
    <nav className="pager" aria-label={label}>
      <PagerLink href={links.firstHref} rel={undefined}>
        Newest
      </PagerLink>
      <PagerLink href={links.previousHref} rel="prev">
        ← Newer
      </PagerLink>
      <PagerLink href={links.nextHref} rel="next">
        Older →
      </PagerLink>
    </nav>
  );
}

function PagerLink({
  href,
  rel,
  children,
}: {
  href: string | null;
  rel: "prev" | "next" | undefined;
  children: string;
}) {
  if (href === null) {
    return (
      <span className="pager-link" aria-disabled="true">
        {children}
      </span>
    );
  }
  return (
    <Link className="pager-link" href={href} rel={rel}>
      {children}
    </Link>
  );
}
