/** Search parameters as a Next.js page receives them. */
export type PageSearchParams = Record<string, string | string[] | undefined>;

/** One value of a search parameter: the first if repeated, undefined when absent or empty. */
export function singleParam(params: PageSearchParams, name: string): string | undefined {
  const value = params[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined || first === "" ? undefined : first;
}

/** `pathname` with `params` (undefined values left out). */
export function hrefWith(pathname: string, params: Record<string, string | undefined>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== "") search.set(key, value);
  }
  const query = search.toString();
  return query === "" ? pathname : `${pathname}?${query}`;
}
