import { z } from "zod";
import { type AuditReceipt, runAuditedChange } from "../audit/run-audited-change";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { AuthDeps } from "../deps";
import { AppError } from "../errors";
import { lockOperatorChanges } from "../locks";
import { auditView } from "../stored";
import { versionedWrite } from "../versioned-write";
import {
  assertAnEnabledAdminRemains,
  type OperatorRecord,
  operatorEntity,
  operatorSelect,
  toOperatorRecord,
  ZOperatorEmail,
  ZOperatorId,
  ZOperatorName,
  ZRole,
} from "./operator-record";

export const ZUpdateOperatorOptions = z
  .strictObject({
    id: ZOperatorId,
    expectedVersion: ZExpectedVersion,
    email: ZOperatorEmail.optional(),
    name: ZOperatorName.optional(),
    role: ZRole.optional(),
  })
  .refine(
    (options) =>
      options.email !== undefined || options.name !== undefined || options.role !== undefined,
    { error: "give at least one field to change: email, name, role" },
  );
export type UpdateOperatorOptions = z.input<typeof ZUpdateOperatorOptions>;

/**
 * Renames an operator, changes their email or role. A role change applies to their very next
 * request (roles are read per request, not kept in the session). Demoting the last enabled admin
 * is refused.
 */
export async function updateOperator(
  options: UpdateOperatorOptions,
  context: ChangeContext,
  deps: AuthDeps,
): Promise<{ readonly operator: OperatorRecord } & AuditReceipt> {
  const { input, ctx } = parseChange(ZUpdateOperatorOptions, options, context);
  return runAuditedChange(deps, ctx, {
    action: "operator.update",
    entityType: "operator",
    lock: lockOperatorChanges,
    write: versionedWrite(operatorEntity(input.id), input.expectedVersion, async (tx, current) => {
      if (input.email !== undefined && input.email !== current.email) {
        const taken = await tx.operator.findUnique({
          where: { email: input.email },
          select: { id: true },
        });
        if (taken !== null) {
          throw new AppError(
            "CONFLICT",
            `An operator with the email ${input.email} already exists.`,
            {
              fieldErrors: [{ path: "email", message: `${input.email} is already taken` }],
            },
          );
        }
      }
      const row = await tx.operator.update({
        where: { id: input.id },
        data: {
          email: input.email,
          name: input.name,
          role: input.role,
          version: { increment: 1 },
        },
        select: operatorSelect,
      });
      if (current.role === "admin" && row.role !== "admin") await assertAnEnabledAdminRemains(tx);
      const operator = toOperatorRecord(row);
      return { after: auditView(operator), value: { operator } };
    }),
  });
}
