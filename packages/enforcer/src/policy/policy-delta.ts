/**
 * A policy delta: what one version changed, as entries (`entries.ts`). Version n names its base,
 * n - 1, and the checksums of the set before and after, so an enforcer applies it only onto the
 * exact set it was computed from and can verify the result end to end:
 *
 * ```json
 * { "format": 1, "version": 42, "base": 41, "compiledAt": "2025-06-02T10:00:00.000Z",
 *   "baseChecksum": "…64 hex…", "checksum": "…64 hex…",
 *   "changes": [{ "key": "incident:inc-1", "value": { "id": "inc-1", … } },
 *               { "key": "customer:acme", "value": null }] }
 * ```
 *
 * A change with `value: null` removes the entry; any other value sets it (added or replaced).
 * Values are validated against their key's kind when applied (`parseEntry`).
 */
import { z } from "zod";
import { fieldErrorsFromZod, type ParseResult, parseJsonInput } from "./errors";
import { ZCanonicalInstant } from "./schemas";

/** The delta format this build reads and writes. */
export const POLICY_DELTA_FORMAT = 1;

/** At most this many changes travel as one delta; a larger change publishes a full snapshot. */
export const MAX_DELTA_CHANGES = 10_000;

const ZChecksum = z
  .string({ error: "checksum is required" })
  .regex(/^[0-9a-f]{64}$/, { error: "checksum must be 64 lowercase hexadecimal characters" });

const ZVersion = z
  .number({ error: "version must be a number" })
  .int({ error: "version must be a whole number" })
  .min(1, { error: "version must be at least 1" })
  .max(Number.MAX_SAFE_INTEGER, { error: "version is too large" });

export const ZPolicyDeltaChange = z.strictObject({
  key: z.string({ error: "key is required" }).min(1).max(300),
  /** The entry's value; null removes it. */
  value: z.unknown().refine((value) => value !== undefined, { error: "value is required" }),
});

export const ZPolicyDelta = z
  .strictObject({
    format: z.literal(POLICY_DELTA_FORMAT, {
      error: `format must be ${POLICY_DELTA_FORMAT}: this build reads delta format ${POLICY_DELTA_FORMAT} only`,
    }),
    version: ZVersion,
    /** The version it applies onto: always version - 1. */
    base: z.number().int().min(0),
    compiledAt: ZCanonicalInstant,
    /** The set's checksum at `base`. */
    baseChecksum: ZChecksum,
    /** The set's checksum once applied. */
    checksum: ZChecksum,
    changes: z
      .array(ZPolicyDeltaChange)
      .max(MAX_DELTA_CHANGES, { error: `a delta holds at most ${MAX_DELTA_CHANGES} changes` }),
  })
  .superRefine((delta, ctx) => {
    if (delta.base !== delta.version - 1) {
      ctx.addIssue({
        code: "custom",
        path: ["base"],
        message: `version ${delta.version} must name base ${delta.version - 1}, not ${delta.base}`,
      });
    }
    const seen = new Set<string>();
    delta.changes.forEach((change, index) => {
      if (seen.has(change.key)) {
        ctx.addIssue({
          code: "custom",
          path: ["changes", index, "key"],
          message: `"${change.key}" is changed twice`,
        });
      }
      seen.add(change.key);
    });
  });
export type TPolicyDelta = z.output<typeof ZPolicyDelta>;

/** Parses a delta (JSON text or a parsed value) received from Redis. */
export function parsePolicyDelta(input: unknown): ParseResult<TPolicyDelta> {
  const json = parseJsonInput(input, "the delta");
  if (!json.ok) return json;
  const result = ZPolicyDelta.safeParse(json.value);
  if (result.success) return { ok: true, value: result.data };
  return { ok: false, errors: fieldErrorsFromZod(result.error) };
}
