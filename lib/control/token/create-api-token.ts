import { ZInstant } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { type AuditReceipt, runAuditedChange } from "../audit/run-audited-change";
import { newApiToken } from "../auth/secret-token";
import { type ChangeContext, parseChange } from "../change-context";
import type { AuthDeps } from "../deps";
import { validationError } from "../errors";
import { ZRole } from "../operator/operator-record";
import {
  type ApiTokenRecord,
  apiTokenAuditView,
  apiTokenSelect,
  newApiTokenId,
  readApiTokenRecord,
  ZApiTokenName,
} from "./api-token-record";

/** The longest a token may live when it has an expiry: one year and a day. */
const MAX_TOKEN_LIFETIME_MS = 366 * 86_400_000;

export const ZCreateApiTokenOptions = z.strictObject({
  /** What it is for ("ci", "terraform"): tokens are listed by name and prefix. */
  name: ZApiTokenName,
  role: ZRole,
  /** When it stops working; absent or null: never (revoke it instead). */
  expiresAt: ZInstant.nullable().optional(),
});
export type CreateApiTokenOptions = z.input<typeof ZCreateApiTokenOptions>;

/**
 * A new API token. The token itself is in the result ONCE (`token`): only its SHA-256 is stored,
 * so nobody can show it again; a lost token is revoked and replaced.
 */
export async function createApiToken(
  options: CreateApiTokenOptions,
  context: ChangeContext,
  deps: AuthDeps,
): Promise<{ readonly apiToken: ApiTokenRecord; readonly token: string } & AuditReceipt> {
  const { input, ctx } = parseChange(ZCreateApiTokenOptions, options, context);
  const nowMs = deps.clock.nowMs();
  const expiresAtMs = input.expiresAt == null ? null : Date.parse(input.expiresAt);
  if (
    expiresAtMs !== null &&
    (expiresAtMs <= nowMs || expiresAtMs > nowMs + MAX_TOKEN_LIFETIME_MS)
  ) {
    throw validationError([
      {
        path: "expiresAt",
        message:
          expiresAtMs <= nowMs
            ? "expiresAt must be in the future"
            : "expiresAt must be within a year; leave it out for a token that does not expire",
      },
    ]);
  }
  const secret = newApiToken();
  return runAuditedChange(deps, ctx, {
    action: "token.create",
    entityType: "token",
    async write(tx, changeNowMs) {
      const row = await tx.apiToken.create({
        data: {
          id: newApiTokenId(),
          name: input.name,
          prefix: secret.prefix,
          tokenHash: secret.hash,
          role: input.role,
          createdById: ctx.actor.id,
          createdByName: ctx.actor.name,
          expiresAt: expiresAtMs === null ? null : new Date(expiresAtMs),
        },
        select: apiTokenSelect,
      });
      const apiToken = await readApiTokenRecord(tx, row, changeNowMs);
      return {
        entityId: apiToken.id,
        before: null,
        after: apiTokenAuditView(apiToken),
        value: { apiToken, token: secret.token },
      };
    },
  });
}
