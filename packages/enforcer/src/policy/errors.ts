import type { z } from "zod";

/** Where a problem is, from the root of what was parsed: `["tiers", 0, "limit", "capacity"]`. */
export type FieldPath = readonly (string | number)[];

/** One problem a person can act on: the field and what is wrong with it. */
export interface PolicyFieldError {
  readonly path: FieldPath;
  readonly message: string;
}

/** The outcome of parsing untrusted input: the value, or every problem found. */
export type ParseResult<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly errors: readonly PolicyFieldError[] };

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/**
 * A path as a person reads it: `tiers[0].limit.capacity`, `endpointClasses[2].limits["x y"]`.
 * The empty path (the whole input) is `(root)`.
 */
export function formatFieldPath(path: FieldPath): string {
  let text = "";
  for (const segment of path) {
    if (typeof segment === "number") text += `[${segment}]`;
    else if (IDENTIFIER.test(segment)) text += text === "" ? segment : `.${segment}`;
    else text += `[${JSON.stringify(segment)}]`;
  }
  return text === "" ? "(root)" : text;
}

/** One line per error, `path: message`, for logs and command-line output. */
export function formatFieldErrors(errors: readonly PolicyFieldError[]): string {
  return errors.map((error) => `${formatFieldPath(error.path)}: ${error.message}`).join("\n");
}

/**
 * Zod's issues as field errors. An unknown-fields issue (reported by zod on the object) becomes one
 * error per unknown field, with the field in the path, so a form or an import report can point at
 * the exact key. The same message twice for one field (a number failing two checks the same way)
 * is reported once.
 */
export function fieldErrorsFromZod(error: z.ZodError, prefix: FieldPath = []): PolicyFieldError[] {
  const errors: PolicyFieldError[] = [];
  const seen = new Set<string>();
  const add = (path: FieldPath, message: string) => {
    const key = JSON.stringify([path, message]);
    if (seen.has(key)) return;
    seen.add(key);
    errors.push({ path, message });
  };
  for (const issue of error.issues) {
    const path = [...prefix, ...issue.path.map(toPathSegment)];
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) add([...path, key], `unknown field "${key}"; ${issue.message}`);
    } else {
      add(path, issue.message);
    }
  }
  return errors;
}

function toPathSegment(segment: PropertyKey): string | number {
  return typeof segment === "number" ? segment : String(segment);
}

/**
 * `input` as a value: JSON text is parsed (an error saying `what` is not valid JSON), anything
 * else is returned as it is (already parsed).
 */
export function parseJsonInput(input: unknown, what: string): ParseResult<unknown> {
  if (typeof input !== "string") return { ok: true, value: input };
  try {
    return { ok: true, value: JSON.parse(input) as unknown };
  } catch (error: unknown) {
    const reason = error instanceof Error ? error.message : String(error);
    return { ok: false, errors: [{ path: [], message: `${what} is not valid JSON: ${reason}` }] };
  }
}
