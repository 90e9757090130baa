import { sha256Hex } from "@limitplane/enforcer/policy";
import type { AuthDeps } from "../deps";

/**
 * Ends the session whose cookie holds `sessionToken`. Signing out twice, or with a token that
 * matches nothing, does nothing: the cookie is cleared either way.
 */
export async function signOut(
  sessionToken: string,
  deps: Pick<AuthDeps, "db" | "clock">,
): Promise<{ readonly revoked: boolean }> {
  const result = await deps.db.session.updateMany({
    where: { tokenHash: sha256Hex(sessionToken), revokedAt: null },
    data: { revokedAt: new Date(deps.clock.nowMs()) },
  });
  return { revoked: result.count > 0 };
}
