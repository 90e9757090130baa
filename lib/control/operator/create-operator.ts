import { z } from "zod";
import { type AuditReceipt, runAuditedChange } from "../audit/run-audited-change";
import { hashPassword } from "../auth/password";
import { type ChangeContext, parseChange } from "../change-context";
import type { AuthDeps } from "../deps";
import { AppError } from "../errors";
import { lockOperatorChanges } from "../locks";
import { translateDbError } from "../prisma-errors";
import { auditView } from "../stored";
import {
  generatePassword,
  newOperatorId,
  type OperatorRecord,
  operatorSelect,
  toOperatorRecord,
  ZNewPassword,
  ZOperatorEmail,
  ZOperatorName,
  ZRole,
} from "./operator-record";

export const ZCreateOperatorOptions = z.strictObject({
  email: ZOperatorEmail,
  name: ZOperatorName,
  role: ZRole,
  /** Absent: a strong one is generated and returned once. */
  password: ZNewPassword.optional(),
});
export type CreateOperatorOptions = z.input<typeof ZCreateOperatorOptions>;

/**
 * Adds an operator who can sign in at once. The password is hashed before the transaction (it is
 * deliberately slow); a generated one is returned once, in `generatedPassword`, and stored only
 * as its hash.
 */
export async function createOperator(
  options: CreateOperatorOptions,
  context: ChangeContext,
  deps: AuthDeps,
): Promise<
  { readonly operator: OperatorRecord; readonly generatedPassword: string | null } & AuditReceipt
> {
  const { input, ctx } = parseChange(ZCreateOperatorOptions, options, context);
  const generatedPassword = input.password === undefined ? generatePassword() : null;
  const passwordHash = await hashPassword(
    input.password ?? generatedPassword ?? "",
    deps.passwordParams,
  );
  return runAuditedChange(deps, ctx, {
    action: "operator.create",
    entityType: "operator",
    lock: lockOperatorChanges,
    async write(tx) {
      const existing = await tx.operator.findUnique({
        where: { email: input.email },
        select: { id: true },
      });
      if (existing !== null) {
        throw new AppError(
          "CONFLICT",
          `An operator with the email ${input.email} already exists.`,
          {
            fieldErrors: [{ path: "email", message: `${input.email} is already taken` }],
          },
        );
      }
      const row = await tx.operator
        .create({
          data: {
            id: newOperatorId(),
            email: input.email,
            name: input.name,
            role: input.role,
            passwordHash,
          },
          select: operatorSelect,
        })
        .catch((error: unknown) => {
          throw translateDbError(error, { entity: "Operator", key: input.email, field: "email" });
        });
      const operator = toOperatorRecord(row);
      return {
        entityId: operator.id,
        before: null,
        after: auditView(operator),
        value: { operator, generatedPassword },
      };
    },
  });
}
