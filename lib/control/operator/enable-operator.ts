import { z } from "zod";
import { type AuditReceipt, runAuditedChange } from "../audit/run-audited-change";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { AuthDeps } from "../deps";
import { AppError } from "../errors";
import { lockOperatorChanges } from "../locks";
import { auditView } from "../stored";
import { assertExpectedVersion } from "../version-conflict";
import {
  findOperator,
  type OperatorRecord,
  operatorLabel,
  operatorSelect,
  toOperatorRecord,
  ZOperatorId,
} from "./operator-record";

export const ZEnableOperatorOptions = z.strictObject({
  id: ZOperatorId,
  expectedVersion: ZExpectedVersion,
});
export type EnableOperatorOptions = z.input<typeof ZEnableOperatorOptions>;

/** Lets a disabled operator sign in again (their old sessions stay ended). */
export async function enableOperator(
  options: EnableOperatorOptions,
  context: ChangeContext,
  deps: AuthDeps,
): Promise<{ readonly operator: OperatorRecord } & AuditReceipt> {
  const { input, ctx } = parseChange(ZEnableOperatorOptions, options, context);
  return runAuditedChange(deps, ctx, {
    action: "operator.enable",
    entityType: "operator",
    lock: lockOperatorChanges,
    async write(tx) {
      const current = await findOperator(tx, input.id);
      await assertExpectedVersion(
        tx,
        {
          entityType: "operator",
          entityId: input.id,
          label: operatorLabel(current),
          current: auditView(current),
        },
        input.expectedVersion,
      );
      if (current.disabledAt === null) {
        throw new AppError("CONFLICT", `${operatorLabel(current)} is not disabled.`);
      }
      const row = await tx.operator.update({
        where: { id: input.id },
        data: { disabledAt: null, version: { increment: 1 } },
        select: operatorSelect,
      });
      const operator = toOperatorRecord(row);
      return {
        entityId: operator.id,
        before: auditView(current),
        after: auditView(operator),
        value: { operator },
      };
    },
  });
}
