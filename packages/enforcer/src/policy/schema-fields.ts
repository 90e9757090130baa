/**
 * The building blocks of the policy schemas: strict objects, numbers, counts, rates, text, names,
 * ids and instants, each with messages that name the field and the problem. The control plane's
 * own schemas (the change context, operators, tokens) use them too: one definition of each rule.
 */
import { z } from "zod";
import { MAX_RATE_PER_SEC, MIN_RATE_PER_SEC } from "./limit-math";
import {
  CUSTOMER_ID_PATTERN,
  hasForbiddenCharacter,
  NAME_PATTERN,
  RECORD_ID_PATTERN,
} from "./names";

/** A strict object whose unknown-field message lists the fields it does take. */
export function strict<Shape extends z.ZodRawShape>(shape: Shape) {
  const fields = Object.keys(shape).join(", ");
  return z.strictObject(shape, {
    error: (issue) =>
      issue.code === "unrecognized_keys"
        ? `expected only: ${fields}`
        : `expected an object with the fields: ${fields}`,
  });
}

export function describeInput(input: unknown): string {
  if (typeof input === "number") return String(input);
  if (typeof input === "string") return `the text ${JSON.stringify(input.slice(0, 40))}`;
  if (input === null) return "null";
  if (Array.isArray(input)) return "a list";
  return `a value of type ${typeof input}`;
}

export function numberField(label: string) {
  return z.number({
    error: (issue) =>
      issue.input === undefined
        ? `${label} is required`
        : `${label} must be a finite number, not ${describeInput(issue.input)}`,
  });
}

/** A whole count between `min` and `max`. */
export function countField(label: string, max: number, min = 1) {
  return numberField(label)
    .int({
      error: (issue) =>
        typeof issue.input === "number" && Number.isInteger(issue.input)
          ? `${label} must be at most ${max}`
          : `${label} must be a whole number, not ${describeInput(issue.input)}`,
    })
    .min(min, { error: `${label} must be at least ${min}` })
    .max(max, { error: `${label} must be at most ${max}` });
}

export function rateField(label: string) {
  return numberField(label)
    .min(MIN_RATE_PER_SEC, {
      error: `${label} must be at least ${MIN_RATE_PER_SEC} (one unit every ~11.6 days)`,
    })
    .max(MAX_RATE_PER_SEC, { error: `${label} must be at most ${MAX_RATE_PER_SEC}` });
}

/** Trimmed, non-empty, bounded text with no control or bidirectional formatting characters. */
export function textField(label: string, maxLength: number) {
  return z
    .string({
      error: (issue) =>
        issue.input === undefined ? `${label} is required` : `${label} must be text`,
    })
    .trim()
    .min(1, { error: `${label} must not be empty` })
    .max(maxLength, { error: `${label} must be at most ${maxLength} characters` })
    .refine((value) => !hasForbiddenCharacter(value), {
      error: `${label} must not contain control characters (line breaks, tabs) or bidirectional formatting characters`,
    });
}

export function patternField(label: string, pattern: RegExp, rule: string) {
  return z
    .string({
      error: (issue) =>
        issue.input === undefined ? `${label} is required` : `${label} must be text`,
    })
    .regex(pattern, { error: `${label} must be ${rule}` });
}

export const NAME_RULE =
  '1 to 63 characters of a-z, 0-9, "_" and "-", starting with a letter or digit';

export const tierName = (label = "tier") => patternField(label, NAME_PATTERN, NAME_RULE);
export const endpointClassName = (label = "endpoint class") =>
  patternField(label, NAME_PATTERN, NAME_RULE);

/** A customer id: see `CUSTOMER_ID_PATTERN`. */
export const ZCustomerId = patternField(
  "customer id",
  CUSTOMER_ID_PATTERN,
  '1 to 128 characters of A-Z, a-z, 0-9, ".", "_", ":", "@" and "-", starting with a letter or digit',
);

export const recordId = (label: string) =>
  patternField(
    label,
    RECORD_ID_PATTERN,
    '1 to 64 characters of A-Z, a-z, 0-9, "_" and "-", starting with a letter or digit',
  );

/**
 * An ISO 8601 instant with a time zone (`2025-01-31T14:00:00Z`, `2025-01-31T15:00:00+01:00`),
 * normalised to UTC with milliseconds (`2025-01-31T14:00:00.000Z`).
 */
export const ZInstant = z.iso
  .datetime({
    offset: true,
    error: (issue) =>
      issue.input === undefined
        ? "an instant is required"
        : "must be an ISO 8601 instant with a time zone, e.g. 2025-01-31T14:00:00Z",
  })
  .transform((value) => new Date(value).toISOString());

/** An instant already in the normalised form. Snapshots use it: they are compiled output. */
export const ZCanonicalInstant = z.string().refine((value) => isCanonicalInstant(value), {
  error: "must be a UTC instant in the form 2025-01-31T14:00:00.000Z",
});

function isCanonicalInstant(value: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(value)) return false;
  const ms = Date.parse(value);
  return Number.isFinite(ms) && new Date(ms).toISOString() === value;
}
