import { z } from "zod";
import { type AuditReceipt, runAuditedChange } from "../audit/run-audited-change";
import { parseOptions } from "../change-context";
import type { AuthDeps } from "../deps";
import { AppError } from "../errors";
import { lockOperatorChanges } from "../locks";
import {
  type OperatorRecord,
  operatorSelect,
  revokeOperatorSessions,
  toOperatorRecord,
  ZNewPassword,
} from "../operator/operator-record";
import { auditView } from "../stored";
import { hashPassword, MAX_PASSWORD_LENGTH, verifyPassword } from "./password";
import type { Principal } from "./principal";

export const ZChangeOwnPasswordOptions = z.strictObject({
  currentPassword: z
    .string({ error: "currentPassword is required" })
    .min(1, { error: "currentPassword is required" })
    .max(MAX_PASSWORD_LENGTH, {
      error: `currentPassword must be at most ${MAX_PASSWORD_LENGTH} characters`,
    }),
  newPassword: ZNewPassword,
});
export type ChangeOwnPasswordOptions = z.input<typeof ZChangeOwnPasswordOptions>;

/**
 * A signed-in operator changes their own password, proving the current one (a wrong one counts
 * against the sign-in limits, so a stolen session cannot guess it; a right one costs nothing). Every other session of theirs ends; the
 * one making the change stays. Audited as `operator.password-reset` by the operator themselves.
 */
export async function changeOwnPassword(
  principal: Principal,
  options: ChangeOwnPasswordOptions,
  meta: { readonly address: string | null; readonly requestId?: string },
  deps: AuthDeps,
): Promise<{ readonly operator: OperatorRecord; readonly sessionsRevoked: number } & AuditReceipt> {
  const input = parseOptions(ZChangeOwnPasswordOptions, options);
  if (principal.kind !== "operator") {
    throw new AppError("FORBIDDEN", "API tokens have no password; sign in as an operator.");
  }
  const row = await deps.db.operator.findUnique({
    where: { id: principal.id },
    select: { email: true, passwordHash: true },
  });
  if (row === null) throw new AppError("UNAUTHENTICATED", "Sign in again.");
  const isMatch = await deps.signInLimiter.verify({ address: meta.address, email: row.email }, () =>
    verifyPassword(input.currentPassword, row.passwordHash),
  );
  if (!isMatch) {
    throw new AppError("VALIDATION_FAILED", "currentPassword: the current password is wrong.", {
      fieldErrors: [{ path: "currentPassword", message: "the current password is wrong" }],
    });
  }
  const passwordHash = await hashPassword(input.newPassword, deps.passwordParams);
  return runAuditedChange(
    deps,
    {
      actor: { type: "operator", id: principal.id, name: principal.name },
      reason: "changed their own password",
      requestId: meta.requestId,
    },
    {
      action: "operator.password-reset",
      entityType: "operator",
      lock: lockOperatorChanges,
      async write(tx, nowMs) {
        const before = await tx.operator.findUniqueOrThrow({
          where: { id: principal.id },
          select: operatorSelect,
        });
        const updated = await tx.operator.update({
          where: { id: principal.id },
          data: { passwordHash, version: { increment: 1 } },
          select: operatorSelect,
        });
        const sessionsRevoked = await revokeOperatorSessions(
          tx,
          principal.id,
          nowMs,
          principal.sessionId,
        );
        const operator = toOperatorRecord(updated);
        return {
          entityId: operator.id,
          before: auditView(toOperatorRecord(before)),
          after: { ...auditView(operator), passwordChanged: true, sessionsRevoked },
          value: { operator, sessionsRevoked },
        };
      },
    },
  );
}
