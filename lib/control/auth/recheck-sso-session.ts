/**
 * The periodic role re-check of a session signed in through the identity provider. Sessions last
 * hours; groups change sooner. So a session's role is confirmed at the provider again (its refresh
 * token, then userinfo; lib/server/sso/oidc-flow.ts `ssoRechecker`) once `intervalMs` has passed
 * since the last confirmation, on the session's next request, before that request is answered:
 *
 * - **confirmed**: the role, email and name follow the provider (audited as `operator.sso-update`
 *   when they change, by the system actor "identity provider re-check"), and the next check is due
 *   `intervalMs` later. A group removed at the provider demotes within `intervalMs` of the
 *   operator's next request, and no request is ever answered with a role older than that;
 * - **no role left, or the provider refuses** (the refresh token revoked, the identity disabled or
 *   signed out there, its subject changed): the session ends, audited as
 *   `operator.sso-session-end` with the provider's reason;
 * - **the provider cannot be reached**: the request is answered with the role last confirmed and
 *   the check is retried a minute later; with `onOutage: "end-session"` (the default) a session
 *   whose role has gone unconfirmed for two intervals ends (audited), so the bound holds during an
 *   outage too. Break-glass admins (docs/sso.md) are the way in while the provider is down.
 *
 * Of concurrent requests of one session, one claims the check (a guarded update of its due time)
 * and the others are answered with the role as it stands: a refresh token is never used twice at
 * once, which providers that rotate refresh tokens treat as theft.
 */

import { runAuditedChange } from "../audit/run-audited-change";
import { systemActor, type TChangeContext } from "../change-context";
import type { AuthDeps } from "../deps";
import { AppError } from "../errors";
import type { OperatorRecord } from "../operator/operator-record";
import { syncSsoOperator } from "./sign-in-with-sso";
import type { SsoRechecker } from "./sso-identity";

/** How long a claimed check, or a failed one, waits before the next attempt. */
export const SSO_RECHECK_RETRY_MS = 60_000;

/** The session as authenticate.ts read it. */
export interface SsoSessionToCheck {
  readonly id: string;
  readonly operatorId: string;
  readonly ssoTokens: string | null;
  readonly ssoCheckDueAt: Date;
  readonly ssoCheckedAt: Date | null;
}

export type SsoRecheckOutcome =
  | { readonly kind: "kept" }
  | { readonly kind: "confirmed"; readonly operator: OperatorRecord }
  | { readonly kind: "ended"; readonly reason: string };

const RECHECK_ACTOR = "identity provider re-check";

export async function recheckSsoSession(
  session: SsoSessionToCheck,
  rechecker: SsoRechecker,
  deps: AuthDeps,
): Promise<SsoRecheckOutcome> {
  const nowMs = deps.clock.nowMs();
  const claimed = await deps.db.session.updateMany({
    where: { id: session.id, revokedAt: null, ssoCheckDueAt: session.ssoCheckDueAt },
    data: { ssoCheckDueAt: new Date(nowMs + SSO_RECHECK_RETRY_MS) },
  });
  if (claimed.count === 0) return { kind: "kept" };

  const verdict = await rechecker.check(session.ssoTokens);
  if (verdict.kind === "unreachable") {
    const confirmedAtMs = (session.ssoCheckedAt ?? session.ssoCheckDueAt).getTime();
    const isStale = nowMs - confirmedAtMs >= 2 * rechecker.intervalMs;
    console.warn(
      `sso re-check of session ${session.id}: the provider is unreachable (${verdict.reason})${
        isStale && rechecker.onOutage === "end-session" ? "; the session ends" : ""
      }`,
    );
    if (isStale && rechecker.onOutage === "end-session") {
      return endSession(
        session,
        `The identity provider could not be reached to confirm the role for ${Math.round(
          (nowMs - confirmedAtMs) / 60_000,
        )} minutes (${verdict.reason}).`,
        deps,
      );
    }
    return { kind: "kept" };
  }
  if (verdict.kind === "refused") {
    return endSession(session, `The identity provider refused: ${verdict.reason}`, deps);
  }
  const ctx: TChangeContext = {
    actor: systemActor(RECHECK_ACTOR),
    reason: "The role was re-checked at the identity provider",
  };
  let operator: OperatorRecord;
  try {
    ({ operator } = await syncSsoOperator(verdict.identity, deps, { mayCreate: false, ctx }));
  } catch (error: unknown) {
    if (!(error instanceof AppError)) throw error;
    return endSession(session, error.message, deps);
  }
  if (operator.id !== session.operatorId) {
    return endSession(session, "The identity now belongs to another account.", deps);
  }
  await deps.db.session.updateMany({
    where: { id: session.id, revokedAt: null },
    data: {
      ssoTokens: verdict.sealedTokens,
      ssoCheckedAt: new Date(nowMs),
      ssoCheckDueAt: new Date(nowMs + rechecker.intervalMs),
    },
  });
  return { kind: "confirmed", operator };
}

async function endSession(
  session: SsoSessionToCheck,
  reason: string,
  deps: AuthDeps,
): Promise<SsoRecheckOutcome> {
  await runAuditedChange(
    deps,
    { actor: systemActor(RECHECK_ACTOR), reason: reason.slice(0, 1000) },
    {
      action: "operator.sso-session-end",
      entityType: "operator",
      async write(tx, nowMs) {
        const ended = await tx.session.updateMany({
          where: { id: session.id, revokedAt: null },
          data: { revokedAt: new Date(nowMs), ssoTokens: null },
        });
        return {
          entityId: session.operatorId,
          before: { sessionId: session.id, isLive: ended.count > 0 },
          after: { sessionId: session.id, isLive: false },
          value: {},
        };
      },
    },
  );
  return { kind: "ended", reason };
}
