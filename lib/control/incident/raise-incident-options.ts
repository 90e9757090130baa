/**
 * What a raise of an incident override may say, and every rule it must meet that needs no
 * database: one definition for the service (`raiseIncident`), the API (its body schema) and the
 * console's form, which checks with these before it sends. Pure (zod and the policy model): safe
 * in a client component.
 */
import {
  checkIncidentGuardrails,
  fieldErrorsFromZod,
  formatFieldPath,
  type GuardrailSettings,
  MAX_INCIDENT_DURATION_MS,
  type TLimitSpec,
  ZIncidentOverride,
  ZInstant,
} from "@limitplane/enforcer/policy";
import { z } from "zod";
import { checkOptionsAndReason } from "../change-context";
import { type FieldError, toFieldErrors } from "../errors";

const shape = ZIncidentOverride.shape;

export const ZIncidentDurationMs = z
  .number({ error: "durationMs must be a number of milliseconds" })
  .int({ error: "durationMs must be a whole number of milliseconds" })
  .min(1_000, { error: "durationMs must be at least 1000 (one second)" })
  .max(MAX_INCIDENT_DURATION_MS, {
    error: `durationMs must be at most ${MAX_INCIDENT_DURATION_MS}`,
  });

export const ZRaiseIncidentOptions = z
  .strictObject({
    /** Generated (`inc-` and random hex) when not given. */
    id: shape.id.optional(),
    customerId: shape.customerId,
    /** null or absent: the account layer (all endpoints). */
    endpointClass: shape.endpointClass.default(null),
    /** Multiplies the limit it replaces; give this or `limit`. */
    factor: shape.factor,
    /** An absolute limit instead of a factor. */
    limit: shape.limit,
    /** @default now */
    startsAt: ZInstant.optional(),
    /** When it ends; give this or `durationMs` (from `startsAt`). */
    expiresAt: ZInstant.optional(),
    durationMs: ZIncidentDurationMs.optional(),
    /** Who is responsible for it. @default the actor's name */
    owner: shape.owner.optional(),
    /** Why, as shown on the incident. @default the change's reason */
    reason: shape.reason.optional(),
    ticketUrl: shape.ticketUrl,
  })
  .superRefine((options, ctx) => {
    if ((options.expiresAt === undefined) === (options.durationMs === undefined)) {
      ctx.addIssue({
        code: "custom",
        path: ["expiresAt"],
        message: "give either expiresAt or durationMs (how long from startsAt)",
      });
    }
  });
export type RaiseIncidentOptions = z.input<typeof ZRaiseIncidentOptions>;
export type TRaiseIncidentOptions = z.output<typeof ZRaiseIncidentOptions>;

/** What a raise takes from its context: the generated id, the clock, the actor and the reason. */
export interface RaiseDefaults {
  readonly id: string;
  readonly nowMs: number;
  /** The actor's name: the owner when the raise names none. */
  readonly owner: string;
  /** The change's reason: the incident's when the raise gives none. */
  readonly reason: string;
}

/** The incident override a parsed raise describes, to be parsed with `ZIncidentOverride`. */
export function incidentOfRaise(
  input: TRaiseIncidentOptions,
  defaults: RaiseDefaults,
): z.input<typeof ZIncidentOverride> {
  const startsAt = input.startsAt ?? new Date(defaults.nowMs).toISOString();
  const expiresAt =
    input.expiresAt ?? new Date(Date.parse(startsAt) + (input.durationMs ?? 0)).toISOString();
  return {
    id: input.id ?? defaults.id,
    customerId: input.customerId,
    endpointClass: input.endpointClass,
    factor: input.factor,
    limit: input.limit,
    startsAt,
    expiresAt,
    owner: input.owner ?? defaults.owner,
    reason: input.reason ?? defaults.reason,
    ticketUrl: input.ticketUrl,
  };
}

/** What {@link checkRaiseIncident} needs to know beyond the raise itself. */
export interface RaiseCheckContext {
  readonly guardrails: GuardrailSettings;
  /** The enforced limit the incident would replace (`findReplacedLimit`), or null. */
  readonly replacedLimit: TLimitSpec | null;
  /** Now, on the wall clock: an expiry already past is refused. */
  readonly nowMs: number;
}

/**
 * Every problem the service would find in a raise before it looks at the database: the options
 * (`ZRaiseIncidentOptions`), the change's reason (`ZReason`), the incident they make
 * (`ZIncidentOverride`) and its guardrails (`checkIncidentGuardrails`) against the limit it
 * replaces. Field paths are the API's (`factor`, `limit.capacity`, `durationMs`, `reason`). What
 * needs the database (the customer and endpoint class exist, no overlapping incident, the
 * guardrails as stored now) is the service's alone.
 */
export function checkRaiseIncident(
  options: unknown,
  reason: unknown,
  context: RaiseCheckContext,
): FieldError[] {
  const parsed = checkOptionsAndReason(ZRaiseIncidentOptions, options, reason);
  const { errors } = parsed;
  // A reason still being typed does not hide the guardrails: the rest is checked regardless.
  if (parsed.options === null) return errors;
  const incident = ZIncidentOverride.safeParse(
    incidentOfRaise(parsed.options, {
      // Placeholders that meet the schema: the service generates the id and takes the owner
      // from the actor.
      id: "inc-check",
      owner: "check",
      nowMs: context.nowMs,
      reason: parsed.reason ?? "reason",
    }),
  );
  if (!incident.success) return [...errors, ...toFieldErrors(fieldErrorsFromZod(incident.error))];
  return [
    ...errors,
    ...checkIncidentGuardrails(incident.data, {
      guardrails: context.guardrails,
      replacedLimit: context.replacedLimit,
      nowMs: context.nowMs,
    }).map((error) => ({ path: formatFieldPath(error.path), message: error.message })),
  ];
}
