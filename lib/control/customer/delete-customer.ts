import { ZCustomer } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { ControlDeps } from "../deps";
import { AppError } from "../errors";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { versionedWrite } from "../versioned-write";
import { type CustomerRecord, customerEntity, customerLabel } from "./customer-record";
import { findCustomerPolicyEntries } from "./customer-references";

export const ZDeleteCustomerOptions = z.strictObject({
  id: ZCustomer.shape.id,
  expectedVersion: ZExpectedVersion,
});
export type DeleteCustomerOptions = z.input<typeof ZDeleteCustomerOptions>;

/**
 * Removes a customer from the registry. One with overrides or current incidents is refused,
 * naming them: removing those changes what enforcers do, and is each its own audited change.
 * Past incidents stay as history.
 */
export async function deleteCustomer(
  options: DeleteCustomerOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly customer: CustomerRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZDeleteCustomerOptions, options, context);
  return runPolicyChange(deps, ctx, {
    action: "customer.delete",
    entityType: "customer",
    affectsSnapshot: false,
    touches: "customer",
    focus: null,
    write: versionedWrite(
      customerEntity(input.id),
      input.expectedVersion,
      async (tx, current, nowMs) => {
        const { overrides, incidents } = await findCustomerPolicyEntries(tx, input.id, nowMs);
        const referrers = [
          ...overrides.map((scope) => `customer override "${scope}"`),
          ...incidents.map((id) => `incident "${id}"`),
        ];
        if (referrers.length > 0) {
          throw new AppError(
            "CONFLICT",
            `${customerLabel(input.id)} still has ${referrers.join(", ")}; delete or revert those first.`,
            { details: { referrers } },
          );
        }
        await tx.customer.delete({ where: { id: input.id }, select: { id: true } });
        return { after: null, value: { customer: current } };
      },
    ),
  });
}
