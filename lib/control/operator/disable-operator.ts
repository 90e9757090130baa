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
  operatorLabel,
  operatorSelect,
  revokeOperatorSessions,
  toOperatorRecord,
  ZOperatorId,
} from "./operator-record";

export const ZDisableOperatorOptions = z.strictObject({
  id: ZOperatorId,
  expectedVersion: ZExpectedVersion,
});
export type DisableOperatorOptions = z.input<typeof ZDisableOperatorOptions>;

/**
 * Stops an operator from signing in and ends every session they have, in the same transaction:
 * their next request is refused. Refused for oneself and for the last enabled admin.
 */
export async function disableOperator(
  options: DisableOperatorOptions,
  context: ChangeContext,
  deps: AuthDeps,
): Promise<{ readonly operator: OperatorRecord; readonly sessionsRevoked: number } & AuditReceipt> {
  const { input, ctx } = parseChange(ZDisableOperatorOptions, options, context);
  return runAuditedChange(deps, ctx, {
    action: "operator.disable",
    entityType: "operator",
    lock: lockOperatorChanges,
    write: versionedWrite(
      operatorEntity(input.id),
      input.expectedVersion,
      async (tx, current, nowMs) => {
        if (current.disabledAt !== null) {
          throw new AppError("CONFLICT", `${operatorLabel(current)} is already disabled.`);
        }
        if (ctx.actor.type === "operator" && ctx.actor.id === current.id) {
          throw new AppError(
            "CONFLICT",
            "You cannot disable yourself; ask another admin to do it.",
          );
        }
        const row = await tx.operator.update({
          where: { id: input.id },
          data: { disabledAt: new Date(nowMs), version: { increment: 1 } },
          select: operatorSelect,
        });
        await assertAnEnabledAdminRemains(tx);
        const sessionsRevoked = await revokeOperatorSessions(tx, input.id, nowMs);
        const operator = toOperatorRecord(row);
        return {
          after: { ...auditView(operator), sessionsRevoked },
          value: { operator, sessionsRevoked },
        };
      },
    ),
  });
}
