/**
 * Authentication for server components and server actions, which have no Request: the session
 * cookie is read through `next/headers`. API tokens are for the API only.
 */
import { cookies } from "next/headers";
import { redirect } from "next/navigation";
import { DATABASE_UNAVAILABLE_DIGEST } from "@/lib/console/outage";
import { authenticateSessionToken } from "@/lib/control/auth/authenticate";
import type { Principal } from "@/lib/control/auth/principal";
import { can, type Permission } from "@/lib/control/auth/roles";
import { SESSION_COOKIE } from "@/lib/control/auth/session-cookie";
import { AppError } from "@/lib/control/errors";
import { isDatabaseUnavailable } from "@/lib/control/prisma-errors";
import { authDeps } from "./composition";

/**
 * Thrown by pages when the database does not answer. Its digest reaches the page's error
 * boundary (production hides messages, not digests), which then says the database is down.
 */
export class DatabaseUnavailableError extends Error {
  override name = "DatabaseUnavailableError";
  readonly digest = DATABASE_UNAVAILABLE_DIGEST;
}

/** The signed-in operator, or null. Throws `DatabaseUnavailableError` when Postgres is down. */
export async function currentPrincipal(): Promise<Principal | null> {
  const token = (await cookies()).get(SESSION_COOKIE)?.value;
  if (token === undefined || token === "") return null;
  try {
    return await authenticateSessionToken(token, authDeps());
  } catch (error: unknown) {
    if (!isDatabaseUnavailable(error)) throw error;
    console.warn(
      `database unavailable while reading a session: ${String(error).split("\n").at(-1)}`,
    );
    throw new DatabaseUnavailableError("the database is unreachable", { cause: error });
  }
}

/**
 * For what must render while the database is down (the shell, the sign-in page): the operator
 * when it can be known, and whether the database answered.
 */
export async function currentPrincipalIfReachable(): Promise<{
  readonly principal: Principal | null;
  readonly isDatabaseUnreachable: boolean;
}> {
  try {
    return { principal: await currentPrincipal(), isDatabaseUnreachable: false };
  } catch (error: unknown) {
    if (!(error instanceof DatabaseUnavailableError)) throw error;
    return { principal: null, isDatabaseUnreachable: true };
  }
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
