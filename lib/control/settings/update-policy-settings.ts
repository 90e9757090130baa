import { ZCeilings, ZGuardrails, ZPolicyDocument } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { ControlDeps } from "../deps";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { auditView, toJson } from "../stored";
import { versionedWrite } from "../versioned-write";
import {
  type PolicySettingsRecord,
  settingsEntity,
  settingsSelect,
  toSettingsRecord,
} from "./settings-record";

/**
 * Fields not given are left as they are. Tightening the guardrails below a current incident
 * override is refused, naming the incident: revert or shorten it first.
 */
export const ZUpdatePolicySettingsOptions = z
  .strictObject({
    expectedVersion: ZExpectedVersion,
    defaultTier: ZPolicyDocument.shape.defaultTier.optional(),
    defaultEndpointClass: ZPolicyDocument.shape.defaultEndpointClass.optional(),
    ceilings: z
      .strictObject({
        perCustomer: ZCeilings.shape.perCustomer.optional(),
        perAddress: ZCeilings.shape.perAddress.optional(),
      })
      .optional(),
    guardrails: z
      .strictObject({
        maxIncidentFactor: ZGuardrails.shape.maxIncidentFactor.unwrap().optional(),
        maxIncidentDurationMs: ZGuardrails.shape.maxIncidentDurationMs.unwrap().optional(),
      })
      .optional(),
  })
  .refine(
    (options) =>
      options.defaultTier !== undefined ||
      options.defaultEndpointClass !== undefined ||
      options.ceilings !== undefined ||
      options.guardrails !== undefined,
    {
      error:
        "give at least one field to change: defaultTier, defaultEndpointClass, ceilings, guardrails",
    },
  );
export type UpdatePolicySettingsOptions = z.input<typeof ZUpdatePolicySettingsOptions>;

export async function updatePolicySettings(
  options: UpdatePolicySettingsOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly settings: PolicySettingsRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZUpdatePolicySettingsOptions, options, context);
  return runPolicyChange(deps, ctx, {
    action: "settings.update",
    entityType: "settings",
    affectsSnapshot: true,
    focus: { collection: "settings" },
    write: versionedWrite(settingsEntity(), input.expectedVersion, async (tx, current) => {
      const row = await tx.policySettings.update({
        where: { id: 1 },
        data: {
          defaultTier: input.defaultTier,
          defaultEndpointClass: input.defaultEndpointClass,
          ceilings: toJson({
            perCustomer: input.ceilings?.perCustomer ?? current.ceilings.perCustomer,
            perAddress: input.ceilings?.perAddress ?? current.ceilings.perAddress,
          }),
          guardrails: toJson({
            maxIncidentFactor:
              input.guardrails?.maxIncidentFactor ?? current.guardrails.maxIncidentFactor,
            maxIncidentDurationMs:
              input.guardrails?.maxIncidentDurationMs ?? current.guardrails.maxIncidentDurationMs,
          }),
          version: { increment: 1 },
        },
        select: settingsSelect,
      });
      const settings = toSettingsRecord(row);
      return { after: auditView(settings), value: { settings } };
    }),
  });
}
