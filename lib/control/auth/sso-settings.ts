/**
 * Single sign-on through an OpenID Connect provider: what is configured, and how a signed-in
 * identity's claims become a role. Pure: the protocol itself (discovery, PKCE, the state and
 * nonce checks, the code exchange) is `lib/server/sso/oidc-flow.ts`, on `openid-client`.
 *
 * Roles come from one claim (`groups` by default, `OIDC_ROLE_CLAIM`), a list of strings or a
 * single string. `OIDC_ROLE_MAP` maps claim values to roles; the highest role any value maps to
 * wins, and an identity whose values map to no role is refused (it gets no access, not viewer).
 */
import { type Role, rankOf } from "./roles";

/** One `OIDC_ROLE_MAP` entry: a claim value (a group) and the role it grants. */
export interface RoleGrant {
  readonly value: string;
  readonly role: Role;
}

export interface SsoSettings {
  /** The provider's issuer (https), whose discovery document is read at `/.well-known/openid-configuration`. */
  readonly issuer: string;
  readonly clientId: string;
  /** Null for a public client (PKCE alone). */
  readonly clientSecret: string | null;
  /** @default "groups" */
  readonly roleClaim: string;
  readonly roleGrants: readonly RoleGrant[];
  /** What the sign-in button says: "Sign in with <displayName>". */
  readonly displayName: string;
  /** PEM of a CA the provider's certificate chains to, besides the system's (a private CA). */
  readonly caPem: string | null;
  /**
   * How often a session's role is confirmed at the provider (OIDC_RECHECK_MINUTES;
   * recheck-sso-session.ts). @default 300_000 (5 minutes)
   */
  readonly recheckIntervalMs: number;
  /**
   * An unreachable provider ends a session whose role has gone unconfirmed for two intervals
   * (`end-session`), or lets it keep its last confirmed role (`keep-session`); OIDC_RECHECK_OUTAGE.
   * @default "end-session"
   */
  readonly onProviderOutage: "end-session" | "keep-session";
}

/** How password sign-in is allowed (PASSWORD_SIGN_IN, BREAK_GLASS_ADMINS). */
export interface PasswordSignInPolicy {
  /** @default true */
  readonly isEnabled: boolean;
  /**
   * Admins who may still sign in with a password while it is off, for when the provider is down.
   * Each such sign-in is audited (`operator.break-glass-sign-in`) and logged as a warning.
   */
  readonly breakGlassEmails: readonly string[];
}

export const PASSWORD_SIGN_IN_ON: PasswordSignInPolicy = { isEnabled: true, breakGlassEmails: [] };

const ROLE_MAP_ENTRY = /^([^=,\s][^=,]*)=(viewer|operator|admin)$/;

/**
 * Parses `OIDC_ROLE_MAP`: `value=role` pairs separated by commas (`lp-admins=admin,sre=operator`).
 * Returns the grants, or the first problem as one sentence naming the entry by position.
 */
export function parseRoleMap(
  text: string,
): { ok: true; grants: RoleGrant[] } | { ok: false; message: string } {
  const entries = text
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
  if (entries.length === 0) {
    return { ok: false, message: "is empty: give value=role pairs such as lp-admins=admin" };
  }
  const grants: RoleGrant[] = [];
  for (const [index, entry] of entries.entries()) {
    const match = ROLE_MAP_ENTRY.exec(entry);
    if (match === null) {
      return {
        ok: false,
        message: `entry ${index + 1} is not value=role with a role of viewer, operator or admin (such as lp-admins=admin)`,
      };
    }
    const value = (match[1] ?? "").trim();
    if (grants.some((grant) => grant.value === value)) {
      return { ok: false, message: `entry ${index + 1} maps "${value}" a second time` };
    }
    grants.push({ value, role: match[2] as Role });
  }
  return { ok: true, grants };
}

/** The values of `claim` in `claims`: a string list, or one string; anything else is none. */
export function claimValues(claims: Readonly<Record<string, unknown>>, claim: string): string[] {
  const raw = claims[claim];
  if (typeof raw === "string") return [raw];
  if (Array.isArray(raw)) return raw.filter((value): value is string => typeof value === "string");
  return [];
}

/** The highest role the identity's claim values grant, or null when none maps to a role. */
export function roleFromClaims(
  claims: Readonly<Record<string, unknown>>,
  settings: Pick<SsoSettings, "roleClaim" | "roleGrants">,
): Role | null {
  const values = new Set(claimValues(claims, settings.roleClaim));
  let best: Role | null = null;
  for (const grant of settings.roleGrants) {
    if (values.has(grant.value) && (best === null || rankOf(grant.role) > rankOf(best))) {
      best = grant.role;
    }
  }
  return best;
}
