import { z } from "zod";
import { type AuditReceipt, runAuditedChange } from "../audit/run-audited-change";
import { hashPassword } from "../auth/password";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { AuthDeps } from "../deps";
import { lockOperatorChanges } from "../locks";
import { auditView } from "../stored";
import { versionedWrite } from "../versioned-write";
import {
  generatePassword,
  type OperatorRecord,
  operatorEntity,
  operatorSelect,
  revokeOperatorSessions,
  toOperatorRecord,
  ZNewPassword,
  ZOperatorId,
} from "./operator-record";

export const ZResetOperatorPasswordOptions = z.strictObject({
  id: ZOperatorId,
  expectedVersion: ZExpectedVersion,
  /** Absent: a strong one is generated and returned once. */
  password: ZNewPassword.optional(),
});
export type ResetOperatorPasswordOptions = z.input<typeof ZResetOperatorPasswordOptions>;

/**
 * Sets an operator's password (an admin's reset) and ends every session they have, so whoever
 * knew the old one is signed out. The audit entry records that it happened, never the password.
 */
export async function resetOperatorPassword(
  options: ResetOperatorPasswordOptions,
  context: ChangeContext,
  deps: AuthDeps,
): Promise<
  {
    readonly operator: OperatorRecord;
    readonly generatedPassword: string | null;
    readonly sessionsRevoked: number;
  } & AuditReceipt
> {
  const { input, ctx } = parseChange(ZResetOperatorPasswordOptions, options, context);
  const generatedPassword = input.password === undefined ? generatePassword() : null;
  const passwordHash = await hashPassword(
    input.password ?? generatedPassword ?? "",
    deps.passwordParams,
  );
  return runAuditedChange(deps, ctx, {
    action: "operator.password-reset",
    entityType: "operator",
    lock: lockOperatorChanges,
    write: versionedWrite(
      operatorEntity(input.id),
      input.expectedVersion,
      async (tx, _current, nowMs) => {
        const row = await tx.operator.update({
          where: { id: input.id },
          data: { passwordHash, version: { increment: 1 } },
          select: operatorSelect,
        });
        const sessionsRevoked = await revokeOperatorSessions(tx, input.id, nowMs);
        const operator = toOperatorRecord(row);
        return {
          after: { ...auditView(operator), passwordChanged: true, sessionsRevoked },
          value: { operator, generatedPassword, sessionsRevoked },
        };
      },
    ),
  });
}
