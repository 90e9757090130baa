import { z } from "zod";
import { parseOptions } from "../change-context";
import type { AuthDeps } from "../deps";

export const ZEndSsoSessionsOptions = z.strictObject({
  issuer: z.string().min(1).max(500),
  subject: z.string().min(1).max(500),
});
export type EndSsoSessionsOptions = z.input<typeof ZEndSsoSessionsOptions>;

/**
 * The provider said this identity signed out (OpenID Connect back-channel logout,
 * lib/server/sso/oidc-flow.ts checks its token): every live session of the linked operator ends,
 * whichever way it was signed in. An identity with no account here ends nothing.
 */
export async function endSsoSessions(
  options: EndSsoSessionsOptions,
  deps: Pick<AuthDeps, "db" | "clock">,
): Promise<{ readonly sessionsEnded: number }> {
  const input = parseOptions(ZEndSsoSessionsOptions, options);
  const operator = await deps.db.operator.findUnique({
    where: { ssoIssuer_ssoSubject: { ssoIssuer: input.issuer, ssoSubject: input.subject } },
    select: { id: true },
  });
  if (operator === null) return { sessionsEnded: 0 };
  const nowMs = deps.clock.nowMs();
  const { count } = await deps.db.session.updateMany({
    where: { operatorId: operator.id, revokedAt: null, expiresAt: { gt: new Date(nowMs) } },
    data: { revokedAt: new Date(nowMs) },
  });
  return { sessionsEnded: count };
}
