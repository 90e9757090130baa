import { z } from "zod";
import { parseOptions } from "../change-context";
import type { AuthDeps } from "../deps";
import { type ApiTokenRecord, apiTokenSelect, readApiTokenRecord } from "./api-token-record";

export const ZListApiTokensOptions = z.strictObject({
  /** Also list revoked and expired tokens. @default false */
  includeInactive: z.boolean({ error: "includeInactive must be true or false" }).default(false),
});
export type ListApiTokensOptions = z.input<typeof ZListApiTokensOptions>;

/**
 * API tokens by name, then newest first; never their secrets or hashes. Without
 * `includeInactive`, revoked and expired tokens are left out; suspended ones (their creator is
 * disabled) are listed, so they can be seen and revoked.
 */
export async function listApiTokens(
  options: ListApiTokensOptions,
  deps: Pick<AuthDeps, "db" | "clock">,
): Promise<ApiTokenRecord[]> {
  const input = parseOptions(ZListApiTokensOptions, options);
  const nowMs = deps.clock.nowMs();
  const rows = await deps.db.apiToken.findMany({
    where: input.includeInactive
      ? {}
      : { revokedAt: null, OR: [{ expiresAt: null }, { expiresAt: { gt: new Date(nowMs) } }] },
    orderBy: [{ name: "asc" }, { createdAt: "desc" }],
    select: apiTokenSelect,
  });
  return Promise.all(rows.map((row) => readApiTokenRecord(deps.db, row, nowMs)));
}
