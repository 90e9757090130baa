import { ZIncidentOverride, ZInstant } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { ControlDeps } from "../deps";
import { validationError } from "../errors";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { auditView } from "../stored";
import { versionedWrite } from "../versioned-write";
import { storedIncidentEffect } from "./incident-effect";
import { assertWithinGuardrails } from "./incident-guardrails";
import {
  type IncidentRecord,
  incidentEntity,
  incidentSelect,
  toIncidentRecord,
} from "./incident-record";
import { assertIncidentIsCurrent } from "./incident-state";
import { ZIncidentDurationMs } from "./raise-incident";

export const ZExtendIncidentOptions = z
  .strictObject({
    id: ZIncidentOverride.shape.id,
    expectedVersion: ZExpectedVersion,
    /** The new expiry; give this or `durationMs`, counted from the incident's `startsAt`. */
    expiresAt: ZInstant.optional(),
    durationMs: ZIncidentDurationMs.optional(),
  })
  .superRefine((options, ctx) => {
    if ((options.expiresAt === undefined) === (options.durationMs === undefined)) {
      ctx.addIssue({
        code: "custom",
        path: ["expiresAt"],
        message: "give either expiresAt or durationMs (the new total, from startsAt)",
      });
    }
  });
export type ExtendIncidentOptions = z.input<typeof ZExtendIncidentOptions>;

/**
 * Moves a current incident's expiry later. The maximum duration is checked again from its
 * `startsAt`, so extending cannot outlast the guardrail. To end one sooner, revert it.
 */
export async function extendIncident(
  options: ExtendIncidentOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly incident: IncidentRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZExtendIncidentOptions, options, context);
  // The numbers the audit entry states, as the raise's entry does.
  const effect = await storedIncidentEffect(input.id, deps);
  return runPolicyChange(deps, ctx, {
    action: "incident.extend",
    entityType: "incident",
    affectsSnapshot: true,
    touches: "customer",
    focus: { collection: "incidentOverrides", id: input.id },
    write: versionedWrite(
      incidentEntity(input.id),
      input.expectedVersion,
      async (tx, current, nowMs) => {
        assertIncidentIsCurrent(current, nowMs, "extend");
        const expiresAt =
          input.expiresAt ??
          new Date(Date.parse(current.startsAt) + (input.durationMs ?? 0)).toISOString();
        if (Date.parse(expiresAt) <= Date.parse(current.expiresAt)) {
          throw validationError([
            {
              path: "expiresAt",
              message: `must be later than the current expiry ${current.expiresAt}; to end it sooner, revert it`,
            },
          ]);
        }
        await assertWithinGuardrails(tx, { ...current, expiresAt }, nowMs);
        const row = await tx.incidentOverride.update({
          where: { id: input.id },
          data: { expiresAt: new Date(expiresAt), version: { increment: 1 } },
          select: incidentSelect,
        });
        const incident = toIncidentRecord(row);
        return { after: { ...auditView(incident), effect }, value: { incident } };
      },
    ),
  });
}
