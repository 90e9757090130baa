import { randomBytes } from "node:crypto";
import {
  fieldErrorsFromZod,
  MAX_WINDOW_MS,
  ZIncidentOverride,
  ZInstant,
} from "@limitplane/enforcer/policy";
import { z } from "zod";
import { type ChangeContext, parseChange } from "../change-context";
import { type ControlDeps, getControlDeps } from "../control-deps";
import { requireEndpointClass } from "../endpoint-class/endpoint-class-record";
import { AppError, toFieldErrors, validationError } from "../errors";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { registerSeenCustomer, seenOnlyCustomer } from "../seen-customer/register-seen-customer";
import type { SeenRedisDeps } from "../seen-customer/seen-customer-deps";
import { auditView } from "../stored";
import { assertWithinGuardrails } from "./incident-guardrails";
import {
  type IncidentRecord,
  incidentData,
  incidentLabel,
  incidentSelect,
  toIncidentRecord,
} from "./incident-record";

const shape = ZIncidentOverride.shape;

export const ZIncidentDurationMs = z
  .number({ error: "durationMs must be a number of milliseconds" })
  .int({ error: "durationMs must be a whole number of milliseconds" })
  .min(1_000, { error: "durationMs must be at least 1000 (one second)" })
  .max(MAX_WINDOW_MS, { error: `durationMs must be at most ${MAX_WINDOW_MS}` });

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

function generateIncidentId(): string {
  return `inc-${randomBytes(6).toString("hex")}`;
}

/**
 * Raises or cuts one customer's limit for a while: an incident override that applies from
 * `startsAt` until `expiresAt` and then stops by itself (enforcers go by the wall clock). Refused
 * beyond the guardrails, or when it overlaps a current incident for the same customer and layer
 * (extend or revert that one instead).
 */
export async function raiseIncident(
  options: RaiseIncidentOptions,
  context: ChangeContext,
  deps: ControlDeps = getControlDeps(),
  seenRedis?: SeenRedisDeps,
): Promise<{ readonly incident: IncidentRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZRaiseIncidentOptions, options, context);
  const nowMs = deps.nowMs();
  const startsAt = input.startsAt ?? new Date(nowMs).toISOString();
  const expiresAt =
    input.expiresAt ?? new Date(Date.parse(startsAt) + (input.durationMs ?? 0)).toISOString();
  const parsed = ZIncidentOverride.safeParse({
    id: input.id ?? generateIncidentId(),
    customerId: input.customerId,
    endpointClass: input.endpointClass,
    factor: input.factor,
    limit: input.limit,
    startsAt,
    expiresAt,
    owner: input.owner ?? ctx.actor.name,
    reason: input.reason ?? ctx.reason,
    ticketUrl: input.ticketUrl,
  });
  if (!parsed.success) throw validationError(toFieldErrors(fieldErrorsFromZod(parsed.error)));
  const incident = parsed.data;
  // A customer only the gateways know is registered by this change (its own audit entry).
  const seen = await seenOnlyCustomer(deps.db, incident.customerId, seenRedis);
  return runPolicyChange(deps, ctx, {
    action: "incident.raise",
    entityType: "incident",
    affectsSnapshot: true,
    touches: "customer",
    focus: { collection: "incidentOverrides", id: incident.id },
    async write(tx, changeNowMs) {
      await registerSeenCustomer(tx, ctx, seen);
      const existing = await tx.incidentOverride.findUnique({
        where: { id: incident.id },
        select: { id: true },
      });
      if (existing !== null) {
        throw new AppError(
          "CONFLICT",
          `${incidentLabel(incident.id)} already exists; choose another id.`,
          {
            fieldErrors: [{ path: "id", message: `"${incident.id}" is already taken` }],
          },
        );
      }
      await requireEndpointClass(tx, incident.endpointClass);
      await assertWithinGuardrails(tx, incident, changeNowMs);
      const row = await tx.incidentOverride.create({
        data: { id: incident.id, ...incidentData(incident), createdBy: ctx.actor.name },
        select: incidentSelect,
      });
      const record = toIncidentRecord(row);
      return {
        entityId: record.id,
        customerId: record.customerId,
        before: null,
        after: auditView(record),
        value: { incident: record },
      };
    },
  });
}
