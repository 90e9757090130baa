import { z } from "zod";
import { parseOptions } from "../change-context";
import type { AuthDeps } from "../deps";
import { notFound } from "../errors";
import { type SessionRecord, sessionSelect, toSessionRecord } from "./session-record";

export const ZSessionId = z
  .string({ error: "id must be text" })
  .regex(/^ses_[0-9a-f]{16}$/, { error: "id must be a session id like ses_0123456789abcdef" });

export const ZRevokeSessionOptions = z.strictObject({
  /** Whose session: an operator may end only their own. */
  operatorId: z.string().min(1),
  sessionId: ZSessionId,
});
export type RevokeSessionOptions = z.input<typeof ZRevokeSessionOptions>;

/**
 * Ends one of the operator's sessions (sign-out, or "sign out that other browser"). Someone
 * else's session, or one already ended, is NOT_FOUND: nobody learns which sessions exist.
 * A session signed in through the identity provider gives back its sealed tokens, for the
 * sign-out at the provider (lib/server/sso/oidc-flow.ts `providerSignOutUrl`), and forgets them.
 */
export async function revokeSession(
  options: RevokeSessionOptions,
  deps: Pick<AuthDeps, "db" | "clock">,
): Promise<{ readonly session: SessionRecord; readonly ssoTokens: string | null }> {
  const input = parseOptions(ZRevokeSessionOptions, options);
  const nowMs = deps.clock.nowMs();
  const result = await deps.db.session.updateMany({
    where: {
      id: input.sessionId,
      operatorId: input.operatorId,
      revokedAt: null,
      expiresAt: { gt: new Date(nowMs) },
    },
    data: { revokedAt: new Date(nowMs) },
  });
  if (result.count === 0) throw notFound("Session", input.sessionId);
  const { ssoTokens, ...row } = await deps.db.session.findUniqueOrThrow({
    where: { id: input.sessionId },
    select: { ...sessionSelect, ssoTokens: true },
  });
  if (ssoTokens !== null) {
    await deps.db.session.update({ where: { id: input.sessionId }, data: { ssoTokens: null } });
  }
  return { session: toSessionRecord(row), ssoTokens };
}
