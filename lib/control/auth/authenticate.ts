/**
 * Who a request comes from: the session cookie `lp_session`, or `Authorization: Bearer lp_...`
 * (an API token). An Authorization header, when present, is the credential: the cookie is then
 * ignored, so a script's request never rides on a browser session.
 *
 * A session works while it is not revoked, before its absolute expiry, within the idle limit, and
 * while its operator is enabled; its role is read from the operator on every request, so a role
 * change or a disable applies at once. A token works while not revoked or expired AND while its
 * creator does (token/api-token-record.ts `resolveApiTokenStanding`): an operator's tokens stop
 * the moment the operator is disabled, and never carry more than the operator's current role.
 * Tokens made from the command line have no creator and keep their role. A session signed in
 * through the identity provider has its role re-checked there every few minutes
 * (recheck-sso-session.ts), and ends when the provider refuses. `lastSeenAt`
 * and `lastUsedAt` are written only when older than `touchIntervalMs` (a minute), with a guarded
 * update, so a busy client costs one write a minute, not one per request.
 */

import { sha256Hex } from "@limitplane/enforcer/policy";
import type { AuthDeps } from "../deps";
import { resolveApiTokenStanding } from "../token/api-token-record";
import type { Principal } from "./principal";
import { recheckSsoSession } from "./recheck-sso-session";
import { API_TOKEN_PATTERN } from "./secret-token";
import { sessionTokenFromCookieHeader } from "./session-cookie";

/** Session tokens are 32 random bytes, base64url (secret-token.ts `newSessionToken`). */
const SESSION_TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export type Credential =
  | { readonly kind: "session"; readonly token: string }
  | { readonly kind: "token"; readonly token: string };

/** The credential a request carries, or null (a malformed Authorization header counts as none). */
export function credentialOf(request: Pick<Request, "headers">): Credential | null {
  const authorization = request.headers.get("authorization");
  if (authorization !== null) {
    const match = /^Bearer[ ]+(\S+)\s*$/i.exec(authorization);
    return match?.[1] === undefined ? null : { kind: "token", token: match[1] };
  }
  const session = sessionTokenFromCookieHeader(request.headers.get("cookie"));
  return session === null ? null : { kind: "session", token: session };
}

export async function authenticateRequest(
  request: Pick<Request, "headers">,
  deps: AuthDeps,
): Promise<Principal | null> {
  const credential = credentialOf(request);
  if (credential === null) return null;
  return credential.kind === "session"
    ? authenticateSessionToken(credential.token, deps)
    : authenticateApiToken(credential.token, deps);
}

export async function authenticateSessionToken(
  token: string,
  deps: AuthDeps,
): Promise<Principal | null> {
  if (!SESSION_TOKEN_PATTERN.test(token)) return null;
  const nowMs = deps.clock.nowMs();
  const session = await deps.db.session.findUnique({
    where: { tokenHash: sha256Hex(token) },
    select: {
      id: true,
      expiresAt: true,
      lastSeenAt: true,
      revokedAt: true,
      operatorId: true,
      ssoTokens: true,
      ssoCheckDueAt: true,
      ssoCheckedAt: true,
      operator: { select: { id: true, name: true, role: true, disabledAt: true } },
    },
  });
  if (
    session === null ||
    session.revokedAt !== null ||
    session.expiresAt.getTime() <= nowMs ||
    session.lastSeenAt.getTime() + deps.sessions.idleMs <= nowMs ||
    session.operator.disabledAt !== null
  ) {
    return null;
  }
  if (nowMs - session.lastSeenAt.getTime() >= deps.sessions.touchIntervalMs) {
    // Guarded by the value read: of concurrent requests, one writes.
    await deps.db.session.updateMany({
      where: { id: session.id, lastSeenAt: session.lastSeenAt },
      data: { lastSeenAt: new Date(nowMs) },
    });
  }
  let operator: Pick<Principal, "id" | "name" | "role"> = session.operator;
  const { ssoCheckDueAt } = session;
  if (deps.ssoRecheck !== undefined && ssoCheckDueAt !== null && ssoCheckDueAt.getTime() <= nowMs) {
    const outcome = await recheckSsoSession({ ...session, ssoCheckDueAt }, deps.ssoRecheck, deps);
    if (outcome.kind === "ended") return null;
    if (outcome.kind === "confirmed") operator = outcome.operator;
  }
  return {
    kind: "operator",
    id: operator.id,
    name: operator.name,
    role: operator.role,
    sessionId: session.id,
  };
}

export async function authenticateApiToken(
  token: string,
  deps: AuthDeps,
): Promise<Principal | null> {
  if (!API_TOKEN_PATTERN.test(token)) return null;
  const nowMs = deps.clock.nowMs();
  const row = await deps.db.apiToken.findUnique({
    where: { tokenHash: sha256Hex(token) },
    select: {
      id: true,
      name: true,
      role: true,
      createdById: true,
      expiresAt: true,
      revokedAt: true,
      lastUsedAt: true,
    },
  });
  if (row === null) return null;
  const standing = await resolveApiTokenStanding(deps.db, row, nowMs);
  if (standing.effectiveRole === null) return null;
  if (
    row.lastUsedAt === null ||
    nowMs - row.lastUsedAt.getTime() >= deps.sessions.touchIntervalMs
  ) {
    await deps.db.apiToken.updateMany({
      where: { id: row.id, lastUsedAt: row.lastUsedAt },
      data: { lastUsedAt: new Date(nowMs) },
    });
  }
  return { kind: "token", id: row.id, name: row.name, role: standing.effectiveRole };
}
