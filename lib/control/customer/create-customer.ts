import { ZCustomer } from "@limitplane/enforcer/policy";
import type { z } from "zod";
import { type ChangeContext, parseChange } from "../change-context";
import type { ControlDeps } from "../deps";
import { AppError } from "../errors";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { translateDbError } from "../prisma-errors";
import { auditView } from "../stored";
import {
  type CustomerRecord,
  customerLabel,
  customerSelect,
  toCustomerRecord,
} from "./customer-record";
import { requireTier } from "./customer-references";

/** A customer for the registry: id, display name and tier (see `ZCustomer`). */
export type CreateCustomerOptions = z.input<typeof ZCustomer>;

/**
 * Adds a customer to the registry. The registry is not part of the snapshot, so this is audited
 * (`customer.create`) but produces no policy version.
 */
export async function createCustomer(
  options: CreateCustomerOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly customer: CustomerRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZCustomer, options, context);
  return runPolicyChange(deps, ctx, {
    action: "customer.create",
    entityType: "customer",
    affectsSnapshot: false,
    touches: "customer",
    focus: { collection: "customers", id: input.id },
    async write(tx) {
      const existing = await tx.customer.findUnique({
        where: { id: input.id },
        select: { id: true },
      });
      if (existing !== null) {
        throw new AppError(
          "CONFLICT",
          `${customerLabel(input.id)} already exists; edit it instead.`,
          {
            fieldErrors: [{ path: "id", message: `"${input.id}" is already taken` }],
          },
        );
      }
      await requireTier(tx, input.tier);
      const row = await tx.customer
        .create({ data: input, select: customerSelect })
        .catch((error: unknown) => {
          throw translateDbError(error, { entity: "Customer", key: input.id, field: "id" });
        });
      const customer = toCustomerRecord(row);
      return {
        entityId: customer.id,
        customerId: customer.id,
        before: null,
        after: auditView(customer),
        value: { customer },
      };
    },
  });
}
