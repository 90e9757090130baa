import { sha256Hex } from "@limitplane/enforcer/policy";
import type { AuditTx } from "../audit/run-audited-change";
import type { AuthDeps } from "../deps";
import { newSessionToken } from "./secret-token";
import {
  cleanHeaderText,
  newSessionId,
  type SessionRecord,
  sessionSelect,
  toSessionRecord,
} from "./session-record";

export interface NewSession {
  /** The cookie's value: shown to nobody else, stored only as its hash. */
  readonly sessionToken: string;
  readonly session: SessionRecord;
}

/**
 * A new session for `operatorId`, however the operator proved who they are (a password,
 * sign-in-with-sso.ts): the row stores the SHA-256 of a new random token, which goes to the caller
 * (the cookie) and nowhere else. `db` may be a transaction's.
 */
export async function createSession(
  operatorId: string,
  client: { readonly address: string | null; readonly userAgent: string | null },
  deps: Pick<AuthDeps, "clock" | "sessions"> & { readonly db: AuthDeps["db"] | AuditTx },
  sso: { readonly sealed: string; readonly checkDueAtMs: number } | null = null,
): Promise<NewSession> {
  const nowMs = deps.clock.nowMs();
  const sessionToken = newSessionToken();
  const session = await deps.db.session.create({
    data: {
      id: newSessionId(),
      tokenHash: sha256Hex(sessionToken),
      operatorId,
      createdAt: new Date(nowMs),
      expiresAt: new Date(nowMs + deps.sessions.lifetimeMs),
      lastSeenAt: new Date(nowMs),
      userAgent: cleanHeaderText(client.userAgent, 300),
      address: cleanHeaderText(client.address, 100),
      ...(sso === null
        ? {}
        : {
            ssoTokens: sso.sealed,
            ssoCheckDueAt: new Date(sso.checkDueAtMs),
            ssoCheckedAt: new Date(nowMs),
          }),
    },
    select: sessionSelect,
  });
  return { sessionToken, session: toSessionRecord(session) };
}
