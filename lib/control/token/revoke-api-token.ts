import { z } from "zod";
import { type AuditReceipt, runAuditedChange } from "../audit/run-audited-change";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { AuthDeps } from "../deps";
import { AppError } from "../errors";
import { versionedWrite } from "../versioned-write";
import {
  type ApiTokenRecord,
  apiTokenAuditView,
  apiTokenEntity,
  apiTokenLabel,
  apiTokenSelect,
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
    write: versionedWrite(
      apiTokenEntity(input.id),
      input.expectedVersion,
      async (tx, current, nowMs) => {
        if (current.revokedAt !== null) {
          throw new AppError("CONFLICT", `${apiTokenLabel(current)} is already revoked.`);
        }
        const row = await tx.apiToken.update({
          where: { id: input.id },
          data: { revokedAt: new Date(nowMs), version: { increment: 1 } },
          select: apiTokenSelect,
        });
        const apiToken = await readApiTokenRecord(tx, row, nowMs);
        return { after: apiTokenAuditView(apiToken), value: { apiToken } };
      },
    ),
  });
}
