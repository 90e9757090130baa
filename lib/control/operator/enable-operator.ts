import { z } from "zod";
import { type AuditReceipt, runAuditedChange } from "../audit/run-audited-change";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { AuthDeps } from "../deps";
import { AppError } from "../errors";
import { lockOperatorChanges } from "../locks";
import { auditView } from "../stored";
import { versionedWrite } from "../versioned-write";
import {
  type OperatorRecord,
  operatorEntity,
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
    write: versionedWrite(operatorEntity(input.id), input.expectedVersion, async (tx, current) => {
      if (current.disabledAt === null) {
        throw new AppError("CONFLICT", `${operatorLabel(current)} is not disabled.`);
      }
      const row = await tx.operator.update({
        where: { id: input.id },
        data: { disabledAt: null, version: { increment: 1 } },
        select: operatorSelect,
      });
      const operator = toOperatorRecord(row);
      return { after: auditView(operator), value: { operator } };
    }),
  });
}
