/**
 * Who makes a change and why. Every mutating service takes a `ChangeContext`, validates it with
 * `ZChangeContext`, and copies it into the change's audit entry. Route handlers (issue 6) build it
 * from the signed-in operator or API token; the worker and the seed use {@link systemActor}.
 */

import { fieldErrorsFromZod, textField } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { type FieldError, toFieldErrors, validationError } from "./errors";

/** Longest reason, matching an incident override's `reason` in packages/enforcer/src/policy/schemas/customers.ts. */
export const MAX_REASON_LENGTH = 1000;

/** Trimmed, non-empty, bounded text with no control or bidirectional characters: the policy's own rule. */
export { textField };

export const ACTOR_TYPES = ["operator", "token", "system"] as const;
export type ActorType = (typeof ACTOR_TYPES)[number];

export const ZActor = z.strictObject({
  type: z.enum(ACTOR_TYPES, { error: `actor type must be one of: ${ACTOR_TYPES.join(", ")}` }),
  /** The operator's or token's id; null for the system. */
  id: z
    .string({ error: "actor id must be text or null" })
    .min(1, { error: "actor id must not be empty" })
    .max(200, { error: "actor id must be at most 200 characters" })
    .nullable(),
  /** Kept in the audit log as it was at the time, even if the actor is renamed or removed. */
  name: textField("actor name", 200),
});
export type Actor = z.output<typeof ZActor>;

export const ZChangeContext = z.strictObject({
  actor: ZActor,
  /** Why the change is made: required on every change, shown in the audit log. */
  reason: textField("reason", MAX_REASON_LENGTH),
  /** Correlates the audit entry with the request's logs. */
  requestId: z
    .string({ error: "requestId must be text" })
    .regex(/^[\x21-\x7e]{1,200}$/, {
      error: "requestId must be 1 to 200 printable ASCII characters without spaces",
    })
    .optional(),
  /**
   * Set only by the approval of a change request (change-request/approve-change-request.ts): the
   * change is that request's, and the gate (approval/approval-gate.ts) records the decision in the
   * change's own transaction instead of asking for approval.
   */
  approval: z
    .strictObject({
      changeRequestId: z.string().regex(/^cr_[0-9a-f]{16}$/, {
        error: "changeRequestId must be cr_ and 16 hex characters",
      }),
      expectedVersion: z.number().int().min(1),
      note: textField("note", MAX_REASON_LENGTH).optional(),
    })
    .optional(),
});
export type ChangeContext = z.input<typeof ZChangeContext>;

/** Why a change is made: the one rule for every form, API body and service. */
export const ZReason = ZChangeContext.shape.reason;

export type TChangeContext = z.output<typeof ZChangeContext>;

/** The actor of changes the control plane makes by itself (the worker, the seed). */
export function systemActor(name = "system"): Actor {
  return { type: "system", id: null, name };
}

/**
 * A mutating service's options and context, parsed together so the caller hears of every problem
 * at once: option fields by their own path (`limit.capacity`), context fields as `reason`,
 * `actor.name`.
 */
export function parseChange<Schema extends z.ZodType>(
  schema: Schema,
  options: unknown,
  context: unknown,
): { readonly input: z.output<Schema>; readonly ctx: TChangeContext } {
  const input = schema.safeParse(options);
  const ctx = ZChangeContext.safeParse(context);
  if (input.success && ctx.success) return { input: input.data, ctx: ctx.data };
  throw validationError([
    ...(input.success ? [] : toFieldErrors(fieldErrorsFromZod(input.error))),
    ...(ctx.success ? [] : toFieldErrors(fieldErrorsFromZod(ctx.error))),
  ]);
}

/**
 * A raise's options and reason parsed for a check before the service runs (a form's live
 * errors): every problem of both, the reason's under `reason`, and what did parse. Unlike
 * {@link parseChange} it does not throw, so a reason still being typed does not hide the rest.
 */
export function checkOptionsAndReason<Schema extends z.ZodType>(
  schema: Schema,
  options: unknown,
  reason: unknown,
): {
  readonly options: z.output<Schema> | null;
  readonly reason: z.output<typeof ZReason> | null;
  readonly errors: FieldError[];
} {
  const parsedOptions = schema.safeParse(options);
  const parsedReason = ZReason.safeParse(reason);
  return {
    options: parsedOptions.success ? parsedOptions.data : null,
    reason: parsedReason.success ? parsedReason.data : null,
    errors: [
      ...(parsedOptions.success ? [] : toFieldErrors(fieldErrorsFromZod(parsedOptions.error))),
      ...(parsedReason.success
        ? []
        : toFieldErrors(fieldErrorsFromZod(parsedReason.error), ["reason"])),
    ],
  };
}

/** A read service's options; errors name each field and its problem. */
export function parseOptions<Schema extends z.ZodType>(
  schema: Schema,
  options: unknown,
): z.output<Schema> {
  const result = schema.safeParse(options);
  if (result.success) return result.data;
  throw validationError(toFieldErrors(fieldErrorsFromZod(result.error)));
}

/** The version an update or delete was based on. */
export const ZExpectedVersion = z
  .number({ error: "expectedVersion is required: the version of the entity you read" })
  .int({ error: "expectedVersion must be a whole number" })
  .min(1, { error: "expectedVersion must be at least 1" })
  .max(2_147_483_647, { error: "expectedVersion is too large" });
