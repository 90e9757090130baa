import Link from "next/link";

/**
 * First / next links for a list paged forward by keyset (customers by id, history newest first):
 * the services page forward only, so there is no "previous"; "first page" goes back to the start.
 */
export function ForwardPager({
  firstHref,
  nextHref,
  label = "Pages",
}: {
  /** Null when already on the first page. */
  firstHref: string | null;
  /** Null on the last page. */
  nextHref: string | null;
  label?: string;
}) {
  if (firstHref === null && nextHref === null) return null;
  return (
    <nav className="pager" aria-label={label}>
      {firstHref === null ? (
        <span className="pager-link" aria-disabled="true">
          First page
        </span>
      ) : (
        <Link className="pager-link" href={firstHref}>
          First page
        </Link>
      )}
      {nextHref === null ? (
        <span className="pager-link" aria-disabled="true">
          Next →
        </span>
      ) : (
        <Link className="pager-link" href={nextHref} rel="next">
          Next →
        </Link>
      )}
    </nav>
  );
}
