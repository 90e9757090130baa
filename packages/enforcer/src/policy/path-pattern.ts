/**
 * Path patterns for endpoint classes, request path normalisation, and the specificity order that
 * decides which pattern wins when several match.
 *
 * A pattern is `/` followed by segments separated by `/`:
 * - a literal (`v1`, `reports`): lowercase `a-z 0-9 - . _ ~ ! $ & ' ( ) + , ; = : @`, compared with
 *   the request's decoded, lowercased segment;
 * - `*`: exactly one segment, whatever it is;
 * - `**`: zero or more segments, only as the last segment (`/v1/reports/**` matches `/v1/reports`,
 *   `/v1/reports/1` and `/v1/reports/1/rows`).
 * `/` alone matches only the root. Patterns have no trailing slash and no empty segments.
 */

export type PatternSegment =
  | { readonly kind: "literal"; readonly value: string }
  | { readonly kind: "one" }
  | { readonly kind: "rest" };

/** A parsed path pattern. `source` is the pattern as written. */
export interface PathPattern {
  readonly source: string;
  readonly segments: readonly PatternSegment[];
}

/** Longest pattern accepted, in characters. */
export const MAX_PATTERN_LENGTH = 512;
/** Most segments in a pattern. */
export const MAX_PATTERN_SEGMENTS = 32;

const LITERAL_SEGMENT = /^[a-z0-9\-._~!$&'()+,;=:@]+$/;

/** The pattern, or a message saying what is wrong with it. */
export function parsePathPattern(
  source: string,
):
  | { readonly ok: true; readonly pattern: PathPattern }
  | { readonly ok: false; readonly message: string } {
  const fail = (message: string) => ({ ok: false as const, message });
  if (source.length > MAX_PATTERN_LENGTH) {
    return fail(`path pattern must be at most ${MAX_PATTERN_LENGTH} characters`);
  }
  if (!source.startsWith("/")) return fail('path pattern must start with "/"');
  if (source === "/") return { ok: true, pattern: { source, segments: [] } };
  if (source.endsWith("/")) {
    return fail(
      'path pattern must not end with "/": request paths are matched without the trailing slash',
    );
  }
  const texts = source.slice(1).split("/");
  if (texts.length > MAX_PATTERN_SEGMENTS) {
    return fail(`path pattern must have at most ${MAX_PATTERN_SEGMENTS} segments`);
  }
  const segments: PatternSegment[] = [];
  for (const [index, text] of texts.entries()) {
    if (text === "") return fail('path pattern must not contain an empty segment ("//")');
    if (text === "**") {
      if (index !== texts.length - 1)
        return fail('"**" may only be the last segment of a path pattern');
      segments.push({ kind: "rest" });
    } else if (text === "*") {
      segments.push({ kind: "one" });
    } else if (text.includes("*")) {
      return fail(`"*" must be a whole segment, not part of "${text}"`);
    } else if (text === "." || text === "..") {
      return fail('path pattern must not contain "." or ".." segments');
    } else if (text !== text.toLowerCase()) {
      return fail(`path pattern segment "${text}" must be lowercase: matching ignores case`);
    } else if (!LITERAL_SEGMENT.test(text)) {
      return fail(
        `path pattern segment "${text}" may only contain a-z, 0-9 and - . _ ~ ! $ & ' ( ) + , ; = : @ (write it decoded, without %)`,
      );
    } else {
      segments.push({ kind: "literal", value: text });
    }
  }
  return { ok: true, pattern: { source, segments } };
}

/**
 * The segments a request path is matched on. Normalisation is deliberately at least as forgiving as
 * the servers behind a gateway, so that no spelling of a path reaches a handler while dodging its
 * endpoint class:
 * - an absolute-form target (`https://host/path`) is reduced to its path;
 * - the query (`?`) and fragment (`#`) are ignored;
 * - `\` counts as `/` (as in WHATWG URL parsing);
 * - each segment is percent-decoded (a malformed escape is kept as written) and lowercased, since
 *   common servers (Express by default) route case-insensitively;
 * - empty segments (`//`, a trailing `/`) and `.` are dropped, `..` removes the previous segment
 *   and never goes above the root, also when written `%2e%2e`.
 * An encoded slash (`%2F`) stays inside its segment: it matches `*` but never a literal.
 */
export function normalizeRequestPath(target: string): string[] {
  let path = target;
  if (path.charCodeAt(0) !== SLASH) {
    const scheme = ABSOLUTE_FORM.exec(path);
    if (scheme !== null) path = path.slice(scheme[0].length);
  }
  const query = path.indexOf("?");
  if (query !== -1) path = path.slice(0, query);
  const fragment = path.indexOf("#");
  if (fragment !== -1) path = path.slice(0, fragment);
  if (path.includes("\\")) path = path.replaceAll("\\", "/");
  const segments: string[] = [];
  for (const raw of path.toLowerCase().split("/")) {
    const segment = raw.includes("%") ? decodeSegment(raw).toLowerCase() : raw;
    if (segment === "" || segment === ".") continue;
    if (segment === "..") segments.pop();
    else segments.push(segment);
  }
  return segments;
}

const SLASH = 0x2f;
const ABSOLUTE_FORM = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/;

function decodeSegment(raw: string): string {
  if (!raw.includes("%")) return raw;
  try {
    return decodeURIComponent(raw);
  } catch {
    // A malformed escape (`%zz`, a truncated UTF-8 sequence) is matched as written.
    return raw;
  }
}

/** Whether normalised request `segments` match `pattern`. */
export function matchesPathPattern(pattern: PathPattern, segments: readonly string[]): boolean {
  const patternSegments = pattern.segments;
  for (let index = 0; index < patternSegments.length; index++) {
    const segment = patternSegments[index];
    if (segment === undefined) break;
    if (segment.kind === "rest") return true;
    const actual = segments[index];
    if (actual === undefined) return false;
    if (segment.kind === "literal" && segment.value !== actual) return false;
  }
  return segments.length === patternSegments.length;
}

/**
 * Specificity rank of position `index` of a pattern: a literal beats `*`, `*` beats the end of the
 * pattern, and the end of the pattern beats `**` (so `/v1/reports` beats `/v1/reports/**` for
 * `/v1/reports`). Literal, `*` and end never both match one path at the same position; only the
 * end-versus-`**` order ever decides between two matching patterns at a position where one stops.
 */
function rankAt(pattern: PathPattern, index: number): number {
  const segment = pattern.segments[index];
  if (segment === undefined) return 2;
  if (segment.kind === "literal") return 0;
  if (segment.kind === "one") return 1;
  return 3;
}

/**
 * Orders patterns most specific first: the leftmost position where their ranks differ decides.
 * Returns a negative number when `a` is more specific. 0 means the same shape (same kinds at the
 * same positions); two such patterns match a common path only if they are the same pattern.
 */
export function comparePathPatterns(a: PathPattern, b: PathPattern): number {
  const length = Math.max(a.segments.length, b.segments.length) + 1;
  for (let index = 0; index < length; index++) {
    const difference = rankAt(a, index) - rankAt(b, index);
    if (difference !== 0) return difference;
  }
  return 0;
}

/** A key that is equal for two patterns exactly when they match the same paths. */
export function pathPatternKey(pattern: PathPattern): string {
  return `/${pattern.segments
    .map((segment) =>
      segment.kind === "literal" ? segment.value : segment.kind === "one" ? "*" : "**",
    )
    .join("/")}`;
}
