/**
 * Opaque keyset-pagination cursors for lists ordered by `(at, id)` descending, newest first (the
 * incident history). A cursor is the position of the last row shown; the next page is the rows
 * strictly after it in that order: `at < cursor.at OR (at = cursor.at AND id < cursor.id)`, which
 * an index on `(at DESC, id DESC)` answers without counting past rows, however deep the page. The
 * console's pager links that carry them are lib/console/page-links.ts.
 *
 * Opaque means callers must not build or read them; it does not mean secret or signed. A cursor
 * only chooses where a list the caller may already read resumes, and the list's filters are not in
 * it, so an edited but well-formed cursor shows another page of the same list, nothing more. What
 * decoding guarantees is that anything else (truncated, hand-made, hostile, too long) is refused
 * with a 400 that says what to do, never a crash and never a query built from garbage.
 *
 * Format: base64url (no padding) of `1:<atMs>:<id>`: version, milliseconds since the epoch (the
 * database keeps milliseconds), and the id. One spelling per position: a cursor that decodes but
 * does not re-encode to itself is refused.
 */
import { AppError } from "./errors";

/** A position in a `(at, id)` descending list. */
export interface KeysetCursor {
  /** The row's time, in whole milliseconds since the epoch. */
  readonly atMs: number;
  /** The row's id, as text (decimal for bigint ids). */
  readonly id: string;
}

/** Longest cursor accepted, in characters; a real one is under 60. */
export const MAX_CURSOR_LENGTH = 200;

const CURSOR_VERSION = "1";
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const AT_MS = /^(?:0|[1-9][0-9]{0,15})$/;
const TOKEN_ID = /^[A-Za-z0-9_-]{1,64}$/;
const DECIMAL_ID = /^(?:0|[1-9][0-9]{0,18})$/;
/** Largest Postgres `bigint`: a larger id would fail in the database, so it fails here. */
const MAX_BIGINT = 9_223_372_036_854_775_807n;
/** Latest instant a JavaScript `Date` holds. */
const MAX_DATE_MS = 8_640_000_000_000_000;

export type CursorIdKind =
  /** A non-negative integer in Postgres `bigint` range, written in decimal (audit entry ids). */
  | "decimal"
  /** 1 to 64 of `A-Z a-z 0-9 _ -` (cuid, uuid without braces, record ids). */
  | "token";

export interface CursorOptions {
  /**
   * What an id must look like. Use `"decimal"` for bigint ids, so a decoded id always converts
   * with `BigInt(id)` and fits the column.
   * @default "token"
   */
  idKind?: CursorIdKind;
}

function isValidId(id: string, idKind: CursorIdKind): boolean {
  if (idKind === "token") return TOKEN_ID.test(id);
  return DECIMAL_ID.test(id) && BigInt(id) <= MAX_BIGINT;
}

function toBase64Url(text: string): string {
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/**
 * The cursor for a row. `at` is a `Date` or milliseconds; `id` may be a bigint (Prisma's type for
 * `BigInt` columns), a safe integer or a string.
 * @throws RangeError for a position no row can have (an invalid time, an id of the wrong kind):
 *   a programming mistake, not a user's.
 */
export function encodeCursor(
  row: { readonly at: Date | number; readonly id: string | number | bigint },
  options: CursorOptions = {},
): string {
  const atMs = row.at instanceof Date ? row.at.getTime() : row.at;
  if (!(Number.isInteger(atMs) && atMs >= 0 && atMs <= MAX_DATE_MS)) {
    throw new RangeError("a cursor needs a valid time at or after 1970");
  }
  if (typeof row.id === "number" && !Number.isSafeInteger(row.id)) {
    throw new RangeError("a numeric cursor id must be a safe integer");
  }
  const id = String(row.id);
  if (!isValidId(id, options.idKind ?? "token")) {
    throw new RangeError(`a cursor id must be ${describeIdKind(options.idKind ?? "token")}`);
  }
  return toBase64Url(`${CURSOR_VERSION}:${atMs}:${id}`);
}

function describeIdKind(idKind: CursorIdKind): string {
  return idKind === "decimal"
    ? "a non-negative whole number within bigint range"
    : "1 to 64 letters, digits, _ or -";
}

export type CursorParseResult =
  | { readonly ok: true; readonly cursor: KeysetCursor }
  | { readonly ok: false; readonly message: string };

/**
 * Reads a cursor without throwing. `message` says what is wrong in words fit for a field error;
 * it never repeats the input.
 */
export function parseCursor(raw: unknown, options: CursorOptions = {}): CursorParseResult {
  const fail = (message: string): CursorParseResult => ({ ok: false, message });
  if (typeof raw !== "string") return fail("must be a single text value");
  if (raw.length === 0) return fail("is empty");
  if (raw.length > MAX_CURSOR_LENGTH) return fail(`is longer than ${MAX_CURSOR_LENGTH} characters`);
  if (!BASE64URL.test(raw)) return fail("contains characters a page cursor never has");
  let text: string;
  try {
    text = atob(raw.replace(/-/g, "+").replace(/_/g, "/"));
  } catch {
    return fail("is not a page cursor");
  }
  const parts = text.split(":");
  if (parts.length !== 3) return fail("is not a page cursor");
  const [version, atText, id] = parts;
  if (version !== CURSOR_VERSION) return fail("is from another version of the console");
  if (atText === undefined || !AT_MS.test(atText)) return fail("is not a page cursor");
  const atMs = Number(atText);
  if (atMs > MAX_DATE_MS) return fail("is not a page cursor");
  if (id === undefined || !isValidId(id, options.idKind ?? "token")) {
    return fail("is not a page cursor");
  }
  // One spelling per position: refuses padding, stray low bits and other near-misses.
  if (toBase64Url(text) !== raw) return fail("is not a page cursor");
  return { ok: true, cursor: { atMs, id } };
}

/**
 * Reads a cursor from a request, or throws the 400 a route handler maps it to.
 * @param field The parameter's name, for the field error. @default "cursor"
 * @throws AppError `VALIDATION_FAILED` naming `field`, for anything that is not a cursor this
 *   module made.
 */
export function decodeCursor(
  raw: unknown,
  options: CursorOptions & { field?: string } = {},
): KeysetCursor {
  const result = parseCursor(raw, options);
  if (result.ok) return result.cursor;
  const field = options.field ?? "cursor";
  return invalidCursor(field, result.message);
}

/**
 * Like {@link decodeCursor} for an optional search parameter: absent (`undefined`, `null` or `""`)
 * is the first page (`null`); several values are refused.
 */
export function decodeOptionalCursor(
  raw: string | readonly string[] | null | undefined,
  options: CursorOptions & { field?: string } = {},
): KeysetCursor | null {
  if (raw === undefined || raw === null || raw === "") return null;
  return decodeCursor(raw, options);
}

function invalidCursor(field: string, problem: string): never {
  throw new AppError(
    "VALIDATION_FAILED",
    "This page link is broken or out of date. Go back to the first page of the list.",
    { fieldErrors: [{ path: field, message: `${field} ${problem}` }] },
  );
}
