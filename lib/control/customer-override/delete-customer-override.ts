import { ZCustomerOverride } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { ControlDeps } from "../deps";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { versionedWrite } from "../versioned-write";
import {
  type CustomerOverrideRecord,
  customerOverrideEntity,
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
    write: versionedWrite(
      customerOverrideEntity(input.customerId, input.endpointClass),
      input.expectedVersion,
      async (tx, current) => {
        await tx.customerOverride.delete({ where: { scope }, select: { scope: true } });
        return { after: null, value: { override: current } };
      },
    ),
  });
}
