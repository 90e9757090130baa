import { ZIncidentOverride } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { ControlDeps } from "../deps";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { auditView } from "../stored";
import { versionedWrite } from "../versioned-write";
import { storedIncidentEffect } from "./incident-effect";
import {
  type IncidentRecord,
  incidentEntity,
  incidentSelect,
  toIncidentRecord,
} from "./incident-record";
import { assertIncidentIsCurrent } from "./incident-state";

export const ZRevertIncidentOptions = z.strictObject({
  id: ZIncidentOverride.shape.id,
  expectedVersion: ZExpectedVersion,
});
export type RevertIncidentOptions = z.input<typeof ZRevertIncidentOptions>;

/**
 * Ends an active or upcoming incident now. It leaves the policy at once and a new version is
 * published; the row stays, marked reverted, as history.
 */
export async function revertIncident(
  options: RevertIncidentOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly incident: IncidentRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZRevertIncidentOptions, options, context);
  // The numbers the audit entry states, as the raise's entry does.
  const effect = await storedIncidentEffect(input.id, deps);
  return runPolicyChange(deps, ctx, {
    action: "incident.revert",
    entityType: "incident",
    affectsSnapshot: true,
    touches: "customer",
    focus: null,
    write: versionedWrite(
      incidentEntity(input.id),
      input.expectedVersion,
      async (tx, current, nowMs) => {
        assertIncidentIsCurrent(current, nowMs, "revert");
        const row = await tx.incidentOverride.update({
          where: { id: input.id },
          data: {
            revokedAt: new Date(nowMs),
            revokedBy: ctx.actor.name,
            version: { increment: 1 },
          },
          select: incidentSelect,
        });
        const incident = toIncidentRecord(row);
        return { after: { ...auditView(incident), effect }, value: { incident } };
      },
    ),
  });
}
