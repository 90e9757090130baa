import { z } from "zod";
import { type AuditReceipt, runAuditedChange } from "../audit/run-audited-change";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { AuthDeps } from "../deps";
import { AppError } from "../errors";
import { assertExpectedVersion } from "../version-conflict";
import {
  type ApiTokenRecord,
  apiTokenAuditView,
  apiTokenLabel,
  apiTokenSelect,
  findApiToken,
  readApiTokenRecord,
  ZApiTokenId,
} from "./api-token-record";

export const ZRevokeApiTokenOptions = z.strictObject({
  id: ZApiTokenId,
  expectedVersion: ZExpectedVersion,
});
export type RevokeApiTokenOptions = z.input<typeof ZRevokeApiTokenOptions>;

/** Stops a token from working; its very next request is refused. The row stays, as history. */
export async function revokeApiToken(
  options: RevokeApiTokenOptions,
  context: ChangeContext,
  deps: AuthDeps,
): Promise<{ readonly apiToken: ApiTokenRecord } & AuditReceipt> {
  const { input, ctx } = parseChange(ZRevokeApiTokenOptions, options, context);
  return runAuditedChange(deps, ctx, {
    action: "token.revoke",
    entityType: "token",
    async write(tx, nowMs) {
      const current = await findApiToken(tx, input.id, nowMs);
      await assertExpectedVersion(
        tx,
        {
          entityType: "token",
          entityId: input.id,
          label: apiTokenLabel(current),
          current: apiTokenAuditView(current),
        },
        input.expectedVersion,
      );
      if (current.revokedAt !== null) {
        throw new AppError("CONFLICT", `${apiTokenLabel(current)} is already revoked.`);
      }
      const row = await tx.apiToken.update({
        where: { id: input.id },
        data: { revokedAt: new Date(nowMs), version: { increment: 1 } },
        select: apiTokenSelect,
      });
      const apiToken = await readApiTokenRecord(tx, row, nowMs);
      return {
        entityId: apiToken.id,
        before: apiTokenAuditView(current),
        after: apiTokenAuditView(apiToken),
        value: { apiToken },
      };
    },
  });
}
