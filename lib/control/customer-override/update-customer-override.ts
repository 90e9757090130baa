import { ZCustomerOverride } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { ControlDeps } from "../deps";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { auditView, toJson } from "../stored";
import { versionedWrite } from "../versioned-write";
import {
  type CustomerOverrideRecord,
  customerOverrideEntity,
  customerOverrideSelect,
  overrideScope,
  toCustomerOverrideRecord,
} from "./customer-override-record";

export const ZUpdateCustomerOverrideOptions = z.strictObject({
  customerId: ZCustomerOverride.shape.customerId,
  endpointClass: ZCustomerOverride.shape.endpointClass,
  expectedVersion: ZExpectedVersion,
  limit: ZCustomerOverride.shape.limit,
});
export type UpdateCustomerOverrideOptions = z.input<typeof ZUpdateCustomerOverrideOptions>;

export async function updateCustomerOverride(
  options: UpdateCustomerOverrideOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly override: CustomerOverrideRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZUpdateCustomerOverrideOptions, options, context);
  const scope = overrideScope(input.customerId, input.endpointClass);
  return runPolicyChange(deps, ctx, {
    action: "override.update",
    entityType: "customer-override",
    affectsSnapshot: true,
    touches: "customer",
    focus: { collection: "customerOverrides", id: scope },
    write: versionedWrite(
      customerOverrideEntity(input.customerId, input.endpointClass),
      input.expectedVersion,
      async (tx) => {
        const row = await tx.customerOverride.update({
          where: { scope },
          data: { limit: toJson(input.limit), version: { increment: 1 } },
          select: customerOverrideSelect,
        });
        const override = toCustomerOverrideRecord(row);
        return { after: auditView(override), value: { override } };
      },
    ),
  });
}
