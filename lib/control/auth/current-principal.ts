/**
 * Authentication for server components and server actions, which have no Request: the session
 * cookie is read through `next/headers`. API tokens are for the API only.
 */
import { cookies } from "next/headers";
import { redirect } from "next/navigation";
import { AppError } from "../errors";
import { getAuthDeps } from "./auth-deps";
import { authenticateSessionToken } from "./authenticate";
import type { Principal } from "./principal";
import { can, type Permission } from "./roles";
import { SESSION_COOKIE } from "./session-cookie";

/** The signed-in operator, or null. */
export async function currentPrincipal(): Promise<Principal | null> {
  const token = (await cookies()).get(SESSION_COOKIE)?.value;
  if (token === undefined || token === "") return null;
  return authenticateSessionToken(token, getAuthDeps());
}

export interface RequirePrincipalOptions {
  /**
   * Where to come back to after signing in (a path on this site). Server components cannot read
   * their own URL, so the page passes it. @default "/"
   */
  readonly next?: string;
}

/**
 * The signed-in operator. Signed out: redirects to `/sign-in?next=...`. Signed in without
 * `permission`: throws AppError FORBIDDEN (the page's error boundary shows it).
 */
export async function requirePrincipal(
  permission?: Permission,
  options: RequirePrincipalOptions = {},
): Promise<Principal> {
  const principal = await currentPrincipal();
  if (principal === null) redirect(signInPath(options.next ?? "/"));
  if (permission !== undefined && !can(principal.role, permission)) {
    throw new AppError(
      "FORBIDDEN",
      `Your role (${principal.role}) may not do this; it needs ${permission}.`,
      { details: { permission, role: principal.role } },
    );
  }
  return principal;
}

/** `/sign-in?next=<path>`, keeping only same-site paths so the redirect cannot be turned outward. */
export function signInPath(next: string): string {
  const safe =
    next.startsWith("/") && !next.startsWith("//") && !next.startsWith("/\\") ? next : "/";
  return `/sign-in?next=${encodeURIComponent(safe)}`;
}
