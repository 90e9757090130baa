/**
 * The RLS v3 `RateLimitRequest` as this service accepts it, parsed from what the protobuf decoder
 * gives (proto-loader with `keepCase`, so fields keep their proto names). The decoder fills every
 * absent field with its default, so a missing field arrives as an empty string, list or zero and
 * is refused here by name.
 *
 * Bounds keep one request's cost small whatever a caller sends: a gateway sends a handful of
 * descriptors of a few short entries; these limits are far above that and far below what would
 * let one call hold the process.
 */
import { z } from "zod";
import { MAX_HITS_ADDEND } from "./descriptor-mapping";

/** At most this many descriptors in one request. */
export const MAX_DESCRIPTORS = 64;
/** At most this many entries in one descriptor. */
export const MAX_ENTRIES = 32;
/** At most this many characters in an entry key or value (a long path fits). */
export const MAX_ENTRY_LENGTH = 4_096;

/** The protobuf decoder turns bytes that are not UTF-8 into U+FFFD; no real value holds one. */
const REPLACEMENT_CHARACTER = "\uFFFD";

const entryText = () =>
  z
    .string({ error: "is required" })
    .min(1, { error: "must not be empty" })
    .max(MAX_ENTRY_LENGTH, { error: `takes at most ${MAX_ENTRY_LENGTH} characters` })
    .refine((text) => !text.includes(REPLACEMENT_CHARACTER), {
      error: "is not valid UTF-8",
    });

const ZEntry = z.object({ key: entryText(), value: entryText() });

const ZDescriptor = z.object({
  entries: z
    .array(ZEntry, { error: "are required" })
    .min(1, { error: "must hold at least one entry" })
    .max(MAX_ENTRIES, { error: `take at most ${MAX_ENTRIES} entries` }),
  // Envoy's per-descriptor limit override; present (not null) when the route set one.
  limit: z
    .object({
      requests_per_unit: z
        .number({ error: "must be a number" })
        .int({ error: "must be a whole number" })
        .min(0, { error: "must not be negative" }),
      unit: z.union([z.string(), z.number()]),
    })
    .nullable()
    .optional(),
});

export const ZRateLimitRequest = z.object({
  domain: z
    .string({ error: "is required" })
    .min(1, { error: "is required" })
    .max(128, { error: "takes at most 128 characters" })
    .refine((text) => !text.includes(REPLACEMENT_CHARACTER), {
      error: "is not valid UTF-8",
    }),
  descriptors: z
    .array(ZDescriptor, { error: "are required" })
    .min(1, { error: "must hold at least one descriptor" })
    .max(MAX_DESCRIPTORS, { error: `take at most ${MAX_DESCRIPTORS} descriptors` }),
  hits_addend: z
    .number({ error: "must be a number" })
    .int({ error: "must be a whole number" })
    .min(0, { error: "must not be negative" })
    .max(MAX_HITS_ADDEND, { error: `must be at most ${MAX_HITS_ADDEND}` })
    .default(0),
});
export type TRateLimitRequest = z.output<typeof ZRateLimitRequest>;

/** A refused request: the field to fix, and why. */
export interface RequestFieldError {
  readonly field: string;
  readonly message: string;
}

/** The request, or the first problem with it (the one a gateway operator fixes first). */
export function parseRateLimitRequest(
  raw: unknown,
):
  | { readonly ok: true; readonly request: TRateLimitRequest }
  | ({ readonly ok: false } & RequestFieldError) {
  // Counted before zod walks it: 10,000 descriptors are refused without parsing each one.
  if (typeof raw === "object" && raw !== null && "descriptors" in raw) {
    const { descriptors } = raw;
    if (Array.isArray(descriptors) && descriptors.length > MAX_DESCRIPTORS) {
      return {
        ok: false,
        field: "descriptors",
        message: `take at most ${MAX_DESCRIPTORS} descriptors, got ${descriptors.length}`,
      };
    }
  }
  if (isWellFormed(raw)) return { ok: true, request: raw };
  const parsed = ZRateLimitRequest.safeParse(raw);
  if (parsed.success) return { ok: true, request: parsed.data };
  const issue = parsed.error.issues[0];
  return {
    ok: false,
    field: fieldPath(issue?.path ?? []),
    message: issue?.message ?? "is invalid",
  };
}

function isEntryText(value: unknown): value is string {
  return (
    typeof value === "string" &&
    value.length >= 1 &&
    value.length <= MAX_ENTRY_LENGTH &&
    !value.includes(REPLACEMENT_CHARACTER)
  );
}

/**
 * What {@link ZRateLimitRequest} accepts, checked by hand for the requests gateways send (every
 * field present, as the protobuf decoder gives them): the schema walk cost about as much as
 * decoding the request, on every call. Anything this does not accept is parsed by the schema,
 * which accepts or names the problem, so the two agree on what passes (`rls-request.test.ts`).
 */
function isWellFormed(raw: unknown): raw is TRateLimitRequest {
  if (typeof raw !== "object" || raw === null) return false;
  const { domain, descriptors, hits_addend } = raw as Record<string, unknown>;
  if (
    typeof domain !== "string" ||
    domain.length < 1 ||
    domain.length > 128 ||
    domain.includes(REPLACEMENT_CHARACTER) ||
    typeof hits_addend !== "number" ||
    !Number.isInteger(hits_addend) ||
    hits_addend < 0 ||
    hits_addend > MAX_HITS_ADDEND ||
    !Array.isArray(descriptors) ||
    descriptors.length < 1 ||
    descriptors.length > MAX_DESCRIPTORS
  ) {
    return false;
  }
  for (const descriptor of descriptors as unknown[]) {
    if (typeof descriptor !== "object" || descriptor === null) return false;
    const { entries, limit } = descriptor as Record<string, unknown>;
    if (limit != null) return false;
    if (!Array.isArray(entries) || entries.length < 1 || entries.length > MAX_ENTRIES) return false;
    for (const entry of entries as unknown[]) {
      if (typeof entry !== "object" || entry === null) return false;
      const { key, value } = entry as Record<string, unknown>;
      if (!isEntryText(key) || !isEntryText(value)) return false;
    }
  }
  return true;
}

/** `descriptors[2].entries[0].value` from zod's path. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let text = "";
  for (const part of path) {
    if (typeof part === "number") text += `[${part}]`;
    else text += text === "" ? String(part) : `.${String(part)}`;
  }
  return text === "" ? "request" : text;
}
