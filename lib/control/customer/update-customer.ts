import { ZCustomer } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { ControlDeps } from "../deps";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { auditView } from "../stored";
import { versionedWrite } from "../versioned-write";
import {
  type CustomerRecord,
  customerEntity,
  customerSelect,
  toCustomerRecord,
} from "./customer-record";
import { findCustomerPolicyEntries, requireTier } from "./customer-references";

export const ZUpdateCustomerOptions = z
  .strictObject({
    id: ZCustomer.shape.id,
    expectedVersion: ZExpectedVersion,
    displayName: ZCustomer.shape.displayName.optional(),
    tier: ZCustomer.shape.tier.optional(),
  })
  .refine((options) => options.displayName !== undefined || options.tier !== undefined, {
    error: "give at least one field to change: displayName, tier",
  });
export type UpdateCustomerOptions = z.input<typeof ZUpdateCustomerOptions>;

/**
 * Renames a customer or moves it to another tier. No policy version: the snapshot holds no
 * registry. A customer with overrides or current incidents has the whole policy validated with
 * its new tier (an incident's absolute limit is judged against the tier limit it replaces).
 */
export async function updateCustomer(
  options: UpdateCustomerOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly customer: CustomerRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZUpdateCustomerOptions, options, context);
  return runPolicyChange(deps, ctx, {
    action: "customer.update",
    entityType: "customer",
    affectsSnapshot: false,
    touches: "customer",
    focus: { collection: "customers", id: input.id },
    write: versionedWrite(
      customerEntity(input.id),
      input.expectedVersion,
      async (tx, current, nowMs) => {
        if (input.tier !== undefined) await requireTier(tx, input.tier);
        const row = await tx.customer.update({
          where: { id: input.id },
          data: {
            displayName: input.displayName,
            tier: input.tier,
            version: { increment: 1 },
          },
          select: customerSelect,
        });
        const customer = toCustomerRecord(row);
        const entries =
          customer.tier === current.tier
            ? null
            : await findCustomerPolicyEntries(tx, input.id, nowMs);
        return {
          after: auditView(customer),
          value: { customer },
          checkPolicy: entries !== null && entries.overrides.length + entries.incidents.length > 0,
        };
      },
    ),
  });
}
