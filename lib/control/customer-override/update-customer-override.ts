import { ZCustomerOverride } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { ControlDeps } from "../deps";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { auditView, toJson } from "../stored";
import { assertExpectedVersion } from "../version-conflict";
import {
  type CustomerOverrideRecord,
  customerOverrideSelect,
  findCustomerOverride,
  overrideLabel,
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
    async write(tx) {
      const current = await findCustomerOverride(tx, input.customerId, input.endpointClass);
      await assertExpectedVersion(
        tx,
        {
          entityType: "customer-override",
          entityId: scope,
          label: overrideLabel(scope),
          current: auditView(current),
        },
        input.expectedVersion,
      );
      const row = await tx.customerOverride.update({
        where: { scope },
        data: { limit: toJson(input.limit), version: { increment: 1 } },
        select: customerOverrideSelect,
      });
      const override = toCustomerOverrideRecord(row);
      return {
        entityId: scope,
        customerId: input.customerId,
        before: auditView(current),
        after: auditView(override),
        value: { override },
      };
    },
  });
}
