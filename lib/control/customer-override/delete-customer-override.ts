import { ZCustomerOverride } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { ControlDeps } from "../deps";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { auditView } from "../stored";
import { assertExpectedVersion } from "../version-conflict";
import {
  type CustomerOverrideRecord,
  findCustomerOverride,
  overrideLabel,
  overrideScope,
} from "./customer-override-record";

export const ZDeleteCustomerOverrideOptions = z.strictObject({
  customerId: ZCustomerOverride.shape.customerId,
  endpointClass: ZCustomerOverride.shape.endpointClass,
  expectedVersion: ZExpectedVersion,
});
export type DeleteCustomerOverrideOptions = z.input<typeof ZDeleteCustomerOverrideOptions>;

/** Removes an override: the customer falls back to its tier's limit on that layer. */
export async function deleteCustomerOverride(
  options: DeleteCustomerOverrideOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly override: CustomerOverrideRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZDeleteCustomerOverrideOptions, options, context);
  const scope = overrideScope(input.customerId, input.endpointClass);
  return runPolicyChange(deps, ctx, {
    action: "override.delete",
    entityType: "customer-override",
    affectsSnapshot: true,
    touches: "customer",
    focus: null,
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
      await tx.customerOverride.delete({ where: { scope }, select: { scope: true } });
      return {
        entityId: scope,
        customerId: input.customerId,
        before: auditView(current),
        after: null,
        value: { override: current },
      };
    },
  });
}
