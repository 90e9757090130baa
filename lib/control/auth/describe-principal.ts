import type { AuthDeps } from "../deps";
import { notFound } from "../errors";
import { findOperator, type OperatorRecord } from "../operator/operator-record";
import { type ApiTokenRecord, findApiToken } from "../token/api-token-record";
import type { Principal } from "./principal";
import { can, PERMISSIONS, type Permission } from "./roles";
import { type SessionRecord, sessionSelect, toSessionRecord } from "./session-record";

/** Who the caller is and what they may do: what the console's header and menus are built from. */
export type PrincipalDescription = {
  readonly permissions: readonly Permission[];
} & (
  | {
      readonly kind: "operator";
      readonly operator: OperatorRecord;
      readonly session: SessionRecord;
    }
  | { readonly kind: "token"; readonly apiToken: ApiTokenRecord }
);

export async function describePrincipal(
  principal: Principal,
  deps: Pick<AuthDeps, "db" | "clock">,
): Promise<PrincipalDescription> {
  const permissions = (Object.keys(PERMISSIONS) as Permission[]).filter((permission) =>
    can(principal.role, permission),
  );
  if (principal.kind === "token") {
    return {
      kind: "token",
      permissions,
      apiToken: await findApiToken(deps.db, principal.id, deps.clock.nowMs()),
    };
  }
  const [operator, session] = await Promise.all([
    findOperator(deps.db, principal.id),
    deps.db.session.findUnique({ where: { id: principal.sessionId }, select: sessionSelect }),
  ]);
  if (session === null) throw notFound("Session", principal.sessionId);
  return { kind: "operator", permissions, operator, session: toSessionRecord(session) };
}
