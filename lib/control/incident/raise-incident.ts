import { randomBytes } from "node:crypto";
import { fieldErrorsFromZod, ZIncidentOverride } from "@limitplane/enforcer/policy";
import { type ChangeContext, parseChange } from "../change-context";
import type { ControlDeps, SeenRedisDeps } from "../deps";
import { requireEndpointClass } from "../endpoint-class/endpoint-class-record";
import { AppError, toFieldErrors, validationError } from "../errors";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { registerSeenCustomer, seenOnlyCustomer } from "../seen-customer/register-seen-customer";
import { auditView } from "../stored";
import { incidentEffect } from "./incident-effect";
import { assertWithinGuardrails } from "./incident-guardrails";
import {
  type IncidentRecord,
  incidentData,
  incidentLabel,
  incidentSelect,
  toIncidentRecord,
} from "./incident-record";
import {
  incidentOfRaise,
  type RaiseIncidentOptions,
  ZRaiseIncidentOptions,
} from "./raise-incident-options";

export {
  type RaiseIncidentOptions,
  ZIncidentDurationMs,
  ZRaiseIncidentOptions,
} from "./raise-incident-options";

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
  deps: ControlDeps,
  seenRedis?: SeenRedisDeps,
): Promise<{ readonly incident: IncidentRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZRaiseIncidentOptions, options, context);
  const parsed = ZIncidentOverride.safeParse(
    incidentOfRaise(input, {
      id: generateIncidentId(),
      nowMs: deps.clock.nowMs(),
      owner: ctx.actor.name,
      reason: ctx.reason,
    }),
  );
  if (!parsed.success) throw validationError(toFieldErrors(fieldErrorsFromZod(parsed.error)));
  const incident = parsed.data;
  // A customer only the gateways know is registered by this change (its own audit entry).
  const seen = await seenOnlyCustomer(deps.db, incident.customerId, seenRedis);
  // The numbers the audit entry states, against the policy in force as the change is made.
  const effect = await incidentEffect(incident, deps);
  return runPolicyChange(deps, ctx, {
    action: "incident.raise",
    entityType: "incident",
    affectsSnapshot: true,
    touches: "customer",
    focus: { collection: "incidentOverrides", id: incident.id },
    async write(tx, changeNowMs) {
      await registerSeenCustomer(tx, ctx, seen, deps.auditKey);
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
        after: { ...auditView(record), effect },
        value: { incident: record },
      };
    },
  });
}
