/**
 * Links for a pager over a keyset-paginated list: the same path and filters, with the cursor of
 * the next or previous page (lib/control/keyset-cursor.ts makes them) in one search parameter.
 */

/** Search parameters as a Next.js page receives them. */
export type SearchParamsRecord = Readonly<Record<string, string | readonly string[] | undefined>>;

export interface PageLinkOptions {
  /** The list's path, e.g. `/audit`. */
  pathname: string;
  /** The current search parameters: filters are kept, paging parameters replaced. */
  params: SearchParamsRecord;
  /** The cursor of the last row shown, when there are older rows; else `null`. */
  nextCursor: string | null;
  /** The cursor of the first row shown, when there are newer rows; else `null`. */
  previousCursor: string | null;
  /**
   * Parameter carrying the cursor for the next (older) page.
   * @default "after"
   */
  nextParam?: string;
  /**
   * Parameter carrying the cursor for the previous (newer) page.
   * @default "before"
   */
  previousParam?: string;
}

export interface PageLinks {
  readonly nextHref: string | null;
  readonly previousHref: string | null;
  /** The first (newest) page with the same filters; `null` when already on it. */
  readonly firstHref: string | null;
}

/**
 * Links for a pager: the same path and filters with one cursor parameter, or none for the first
 * page. Values are URL-encoded; parameter order is kept, paging parameters go last.
 */
export function buildPageLinks(options: PageLinkOptions): PageLinks {
  const nextParam = options.nextParam ?? "after";
  const previousParam = options.previousParam ?? "before";
  const base = new URLSearchParams();
  let isOnFirstPage = true;
  for (const [key, value] of Object.entries(options.params)) {
    if (key === nextParam || key === previousParam) {
      if (value !== undefined && value !== "") isOnFirstPage = false;
      continue;
    }
    if (value === undefined) continue;
    for (const item of typeof value === "string" ? [value] : value) base.append(key, item);
  }
  const href = (param: string | null, cursor: string | null): string => {
    const params = new URLSearchParams(base);
    if (param !== null && cursor !== null) params.set(param, cursor);
    const query = params.toString();
    return query === "" ? options.pathname : `${options.pathname}?${query}`;
  };
  return {
    nextHref: options.nextCursor === null ? null : href(nextParam, options.nextCursor),
    previousHref:
      options.previousCursor === null ? null : href(previousParam, options.previousCursor),
    firstHref: isOnFirstPage ? null : href(null, null),
  };
}
