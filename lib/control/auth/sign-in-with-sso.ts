/**
 * Signing in with an identity the OpenID Connect provider vouched for (the protocol is checked by
 * lib/server/sso/oidc-flow.ts before this runs), into a new session.
 *
 * The account is the one linked to the provider's issuer and subject (`sub`, stable where an email
 * may change). On each sign-in its role, email and name follow the provider: a group removed at
 * the provider demotes the operator at their next sign-in, and an identity whose claims map to no
 * role is refused (sso-settings.ts). Every change to the account is audited:
 *
 * - `operator.sso-create`: no account had this identity or its email; one is made, with no usable
 *   password (`!sso`);
 * - `operator.sso-link`: a password account has the same email, and the provider says it verified
 *   the email (`email_verified: true`): the identity is linked to it, the password kept (it still
 *   works while password sign-in is on, and as break-glass). Without a verified email, refused;
 * - `operator.sso-update`: the linked account's role, email or name changed at the provider.
 *
 * A sign-in that changes nothing writes no audit entry, as a password sign-in writes none.
 */
import type { z } from "zod";
import { runAuditedChange } from "../audit/run-audited-change";
import type { TChangeContext } from "../change-context";
import type { AuthDeps } from "../deps";
import { AppError } from "../errors";
import { lockOperatorChanges } from "../locks";
import {
  newOperatorId,
  type OperatorRecord,
  operatorSelect,
  toOperatorRecord,
} from "../operator/operator-record";
import { auditView, type Db } from "../stored";
import { createSession, type NewSession } from "./create-session";
import type { Role } from "./roles";
import { type SsoIdentity, ZSsoIdentity } from "./sso-identity";

/** Stored as the password hash of an account made by SSO: no password matches it. */
export const SSO_ONLY_PASSWORD_HASH = "!sso";

export interface SsoSignInResult extends NewSession {
  readonly operator: OperatorRecord;
  /** What happened to the account; `signed-in` when nothing changed. */
  readonly outcome: "created" | "linked" | "updated" | "signed-in";
}

const ACTIONS = {
  create: "operator.sso-create",
  link: "operator.sso-link",
  update: "operator.sso-update",
} as const;

type Plan =
  | { readonly kind: "create"; readonly email: string }
  | { readonly kind: "link" | "update"; readonly operatorId: string }
  | { readonly kind: "none"; readonly operatorId: string };

async function findLinked(db: Db, issuer: string, subject: string) {
  return db.operator.findUnique({
    where: { ssoIssuer_ssoSubject: { ssoIssuer: issuer, ssoSubject: subject } },
    select: operatorSelect,
  });
}

async function planFor(db: Db, identity: z.output<typeof ZSsoIdentity>, role: Role): Promise<Plan> {
  const linked = await findLinked(db, identity.issuer, identity.subject);
  if (linked !== null) {
    const name = identity.name ?? linked.name;
    const email = identity.email ?? linked.email;
    const isSame = linked.role === role && linked.name === name && linked.email === email;
    return isSame
      ? { kind: "none", operatorId: linked.id }
      : { kind: "update", operatorId: linked.id };
  }
  if (identity.email === null) {
    throw new AppError(
      "FORBIDDEN",
      "The identity provider sent no email for this account, so no account can be made for it.",
    );
  }
  const byEmail = await db.operator.findUnique({
    where: { email: identity.email },
    select: { id: true, ssoIssuer: true },
  });
  if (byEmail === null) return { kind: "create", email: identity.email };
  if (byEmail.ssoIssuer !== null) {
    throw new AppError(
      "CONFLICT",
      `The account ${identity.email} is linked to another identity. Ask an admin to sort it out.`,
      { details: { ssoFailure: "not-linked" } },
    );
  }
  if (!identity.isEmailVerified) {
    throw new AppError(
      "FORBIDDEN",
      `An account with the email ${identity.email} exists, and the identity provider has not verified that this email is yours, so it was not linked.`,
    );
  }
  return { kind: "link", operatorId: byEmail.id };
}

/** What a sign-in through the provider keeps for the session (sealed by lib/server/sso). */
export interface SsoSessionTokens {
  /** The provider's tokens, sealed: stored as `Session.ssoTokens`. */
  readonly sealed: string;
  /** When the role is first re-checked at the provider (recheck-sso-session.ts). */
  readonly checkDueAtMs: number;
}

export async function signInWithSso(
  identityInput: SsoIdentity,
  client: { readonly address: string | null; readonly userAgent: string | null },
  deps: AuthDeps,
  tokens: SsoSessionTokens | null = null,
): Promise<SsoSignInResult> {
  const { operator, outcome } = await syncSsoOperator(identityInput, deps, {
    mayCreate: true,
    ctx: null,
  });
  const session = await createSession(operator.id, client, deps, tokens);
  return { ...session, operator, outcome };
}

/**
 * Brings the linked account in line with what the provider says of the identity (role, email,
 * name), audited when anything changes. At sign-in (`mayCreate`) an unknown identity makes or
 * links an account; at a re-check only the linked account may change. `ctx` is the audit's actor
 * and reason; null: the operator, "signed in through the identity provider".
 */
export async function syncSsoOperator(
  identityInput: SsoIdentity,
  deps: AuthDeps,
  options: { readonly mayCreate: boolean; readonly ctx: TChangeContext | null },
): Promise<{ readonly operator: OperatorRecord; readonly outcome: SsoSignInResult["outcome"] }> {
  const parsed = ZSsoIdentity.safeParse(identityInput);
  if (!parsed.success) {
    throw new AppError(
      "FORBIDDEN",
      `The identity provider's answer was refused: ${parsed.error.issues[0]?.message ?? "malformed"}.`,
    );
  }
  const identity = parsed.data;
  const role = identity.role;
  if (role === null) {
    throw new AppError(
      "FORBIDDEN",
      "Your groups at the identity provider grant no role in this console. Ask an admin to add you to one.",
      { details: { ssoFailure: "no-role" } },
    );
  }
  const plan = await planFor(deps.db, identity, role);
  if (!options.mayCreate && (plan.kind === "create" || plan.kind === "link")) {
    throw new AppError("FORBIDDEN", "The identity is no longer linked to this account.");
  }
  const operator =
    plan.kind === "none"
      ? await signedInOperator(deps.db, plan.operatorId)
      : await apply(plan, role);
  const outcome = (
    { create: "created", link: "linked", update: "updated", none: "signed-in" } as const
  )[plan.kind];
  return { operator, outcome };

  async function apply(
    planned: Exclude<Plan, { kind: "none" }>,
    role: Role,
  ): Promise<OperatorRecord> {
    const operatorId = planned.kind === "create" ? newOperatorId() : planned.operatorId;
    const displayName = identity.name ?? identity.email ?? identity.subject;
    const result = await runAuditedChange<{ operator: OperatorRecord }>(
      deps,
      options.ctx ?? {
        actor: { type: "operator", id: operatorId, name: displayName.slice(0, 200) },
        reason: `Signed in through the identity provider ${identity.issuer}`,
      },
      {
        action: ACTIONS[planned.kind],
        entityType: "operator",
        lock: lockOperatorChanges,
        async write(tx) {
          // The plan was made before the lock; another sign-in may have changed the account since.
          const again = await planFor(tx, identity, role);
          if (
            again.kind !== planned.kind &&
            !(again.kind === "none" && planned.kind === "update")
          ) {
            throw new AppError("CONFLICT", "The account changed while signing in. Sign in again.");
          }
          if (planned.kind === "create") {
            const row = await tx.operator.create({
              data: {
                id: operatorId,
                email: planned.email,
                name: displayName.slice(0, 200),
                role,
                passwordHash: SSO_ONLY_PASSWORD_HASH,
                ssoIssuer: identity.issuer,
                ssoSubject: identity.subject,
              },
              select: operatorSelect,
            });
            const created = toOperatorRecord(row);
            return {
              entityId: operatorId,
              before: null,
              after: { ...auditView(created), ssoIssuer: identity.issuer },
              value: { operator: created },
            };
          }
          const before = await signedInOperator(tx, operatorId);
          const row = await tx.operator.update({
            where: { id: operatorId },
            data: {
              role,
              ...(identity.email === null ? {} : { email: identity.email }),
              ...(identity.name === null ? {} : { name: identity.name.slice(0, 200) }),
              ssoIssuer: identity.issuer,
              ssoSubject: identity.subject,
              version: { increment: 1 },
            },
            select: operatorSelect,
          });
          const after = toOperatorRecord(row);
          return {
            entityId: operatorId,
            before: auditView(before),
            after: { ...auditView(after), ssoIssuer: identity.issuer },
            value: { operator: after },
          };
        },
      },
    );
    if (result.operator.disabledAt !== null) throw disabled();
    return result.operator;
  }
}

function disabled(): AppError {
  return new AppError("FORBIDDEN", "This operator is disabled. Ask an admin to enable it.", {
    details: { ssoFailure: "disabled" },
  });
}

async function signedInOperator(db: Db, id: string): Promise<OperatorRecord> {
  const row = await db.operator.findUnique({ where: { id }, select: operatorSelect });
  if (row === null) throw new AppError("CONFLICT", "The account changed while signing in.");
  const operator = toOperatorRecord(row);
  if (operator.disabledAt !== null) throw disabled();
  return operator;
}
