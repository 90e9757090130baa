import { ZCustomerOverride } from "@limitplane/enforcer/policy";
import type { z } from "zod";
import { type ChangeContext, parseChange } from "../change-context";
import { findCustomer } from "../customer/customer-record";
import type { ControlDeps, SeenRedisDeps } from "../deps";
import { requireEndpointClass } from "../endpoint-class/endpoint-class-record";
import { AppError } from "../errors";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { registerSeenCustomer, seenOnlyCustomer } from "../seen-customer/register-seen-customer";
import { auditView, toJson } from "../stored";
import {
  type CustomerOverrideRecord,
  customerOverrideSelect,
  overrideLabel,
  overrideScope,
  toCustomerOverrideRecord,
} from "./customer-override-record";

/** A standing limit for one customer: all endpoints (`endpointClass: null`) or one class. */
export type CreateCustomerOverrideOptions = z.input<typeof ZCustomerOverride>;

export async function createCustomerOverride(
  options: CreateCustomerOverrideOptions,
  context: ChangeContext,
  deps: ControlDeps,
  seenRedis?: SeenRedisDeps,
): Promise<{ readonly override: CustomerOverrideRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZCustomerOverride, options, context);
  const scope = overrideScope(input.customerId, input.endpointClass);
  // A customer only the gateways know is registered by this change (its own audit entry).
  const seen = await seenOnlyCustomer(deps.db, input.customerId, seenRedis);
  return runPolicyChange(deps, ctx, {
    action: "override.create",
    entityType: "customer-override",
    affectsSnapshot: true,
    touches: "customer",
    focus: { collection: "customerOverrides", id: scope },
    async write(tx) {
      await registerSeenCustomer(tx, ctx, seen, deps.auditKey);
      await findCustomer(tx, input.customerId);
      await requireEndpointClass(tx, input.endpointClass);
      const existing = await tx.customerOverride.findUnique({
        where: { scope },
        select: { version: true },
      });
      if (existing !== null) {
        throw new AppError(
          "CONFLICT",
          `${overrideLabel(scope)} already exists (version ${existing.version}); edit it instead.`,
          { details: { scope, currentVersion: existing.version } },
        );
      }
      const row = await tx.customerOverride.create({
        data: {
          scope,
          customerId: input.customerId,
          endpointClass: input.endpointClass,
          limit: toJson(input.limit),
        },
        select: customerOverrideSelect,
      });
      const override = toCustomerOverrideRecord(row);
      return {
        entityId: scope,
        customerId: input.customerId,
        before: null,
        after: auditView(override),
        value: { override },
      };
    },
  });
}
