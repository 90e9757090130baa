/**
 * What a raise of an outbound budget says, checked the same way by the service, the API and the
 * console's form (which checks with these before it sends). Pure (zod and the policy model): safe
 * in a client component.
 */
import {
  checkOutboundRaise,
  fieldErrorsFromZod,
  formatFieldPath,
  type GuardrailSettings,
  MAX_INCIDENT_DURATION_MS,
  type PolicyFieldError,
  type TLimitSpec,
  ZInstant,
  ZOutboundBudget,
  ZOutboundRaise,
} from "@limitplane/enforcer/policy";
import { z } from "zod";
import { checkOptionsAndReason } from "../change-context";
import type { FieldError } from "../errors";

const MINUTE_MS = 60_000;

/** The longest raise that can be asked for, in minutes (the guardrail may allow less). */
export const MAX_RAISE_DURATION_MINUTES = Math.floor(MAX_INCIDENT_DURATION_MS / MINUTE_MS);

export const ZRaiseDurationMinutes = z
  .number({ error: "durationMinutes must be a number of minutes" })
  .int({ error: "durationMinutes must be a whole number of minutes" })
  .min(1, { error: "durationMinutes must be at least 1" })
  .max(MAX_RAISE_DURATION_MINUTES, {
    error: `durationMinutes must be at most ${MAX_RAISE_DURATION_MINUTES}`,
  });

const raiseShape = ZOutboundRaise.shape;

export const ZRaiseOutboundBudgetOptions = z
  .strictObject({
    name: ZOutboundBudget.shape.name,
    /** The rate limit while raised (any algorithm); absent or null: the budget's own stays. */
    limit: raiseShape.limit,
    /** The concurrency cap while raised; absent or null: the budget's own stays. */
    concurrencyMax: raiseShape.concurrencyMax,
    /** When it ends; give this or `durationMinutes` (from now). */
    until: ZInstant.optional(),
    durationMinutes: ZRaiseDurationMinutes.optional(),
  })
  .superRefine((options, ctx) => {
    if ((options.until === undefined) === (options.durationMinutes === undefined)) {
      ctx.addIssue({
        code: "custom",
        path: ["until"],
        message: "give either until (an instant) or durationMinutes (how long from now)",
      });
    }
    if (options.limit === null && options.concurrencyMax === null) {
      ctx.addIssue({
        code: "custom",
        path: ["limit"],
        message: "give a limit, a concurrencyMax, or both: the numbers in force while raised",
      });
    }
  });
export type RaiseOutboundBudgetOptions = z.input<typeof ZRaiseOutboundBudgetOptions>;
export type TRaiseOutboundBudgetOptions = z.output<typeof ZRaiseOutboundBudgetOptions>;

/** The raise a parsed request describes, from `nowMs`, to be parsed with `ZOutboundRaise`. */
export function raiseOfRequest(
  input: TRaiseOutboundBudgetOptions,
  defaults: { readonly nowMs: number; readonly owner: string; readonly reason: string },
): z.input<typeof ZOutboundRaise> {
  return {
    limit: input.limit,
    concurrencyMax: input.concurrencyMax,
    startsAt: new Date(defaults.nowMs).toISOString(),
    expiresAt:
      input.until ??
      new Date(defaults.nowMs + (input.durationMinutes ?? 0) * MINUTE_MS).toISOString(),
    owner: defaults.owner,
    reason: defaults.reason,
  };
}

/**
 * A raise's errors at the request's fields: `expiresAt` is the request's `until` or
 * `durationMinutes`, whichever it gave.
 */
export function toRequestFieldErrors(
  errors: readonly PolicyFieldError[],
  input: Pick<TRaiseOutboundBudgetOptions, "until">,
): FieldError[] {
  const expiryField = input.until === undefined ? "durationMinutes" : "until";
  return errors.map((error) => ({
    path: formatFieldPath(error.path[0] === "expiresAt" ? [expiryField] : error.path),
    message: error.message,
  }));
}

/** What {@link checkRaiseOutboundBudget} needs beyond the request. */
export interface RaiseOutboundCheckContext {
  readonly guardrails: GuardrailSettings;
  /** The budget's own numbers, which the raise replaces. */
  readonly budget: {
    readonly limit: TLimitSpec | null;
    readonly concurrency: { readonly max: number; readonly slotTtlMs: number } | null;
  };
  /** Now, on the wall clock: an expiry already past is refused. */
  readonly nowMs: number;
}

/**
 * Every problem the service would find in a raise before it looks at the database: the request
 * (`ZRaiseOutboundBudgetOptions`), the reason (`ZReason`), the raise it makes (`ZOutboundRaise`)
 * and the guardrails (`checkOutboundRaise`) against the budget's own numbers. Field paths are the
 * API's (`limit.capacity`, `concurrencyMax`, `durationMinutes`, `until`, `reason`).
 */
export function checkRaiseOutboundBudget(
  options: unknown,
  reason: unknown,
  context: RaiseOutboundCheckContext,
): FieldError[] {
  const parsed = checkOptionsAndReason(ZRaiseOutboundBudgetOptions, options, reason);
  const { errors, options: request } = parsed;
  if (request === null) return errors;
  const raise = ZOutboundRaise.safeParse(
    raiseOfRequest(request, {
      nowMs: context.nowMs,
      // A placeholder that meets the schema: the service takes the owner from the actor.
      owner: "check",
      reason: parsed.reason ?? "reason",
    }),
  );
  if (!raise.success) {
    return [...errors, ...toRequestFieldErrors(fieldErrorsFromZod(raise.error), request)];
  }
  return [
    ...errors,
    ...toRequestFieldErrors(
      checkOutboundRaise(raise.data, context.budget, {
        guardrails: context.guardrails,
        nowMs: context.nowMs,
      }),
      request,
    ),
  ];
}
