import type { Metadata } from "next";
import { redirect } from "next/navigation";
import { SignInForm } from "@/components/auth/sign-in-form";
import { describeSsoFailure } from "@/components/auth/sso-failure";
import { DATABASE_UNAVAILABLE_MESSAGE } from "@/lib/console/outage";
import { safeNextPath } from "@/lib/console/safe-next-path";
import { ssoSettingsFromEnv } from "@/lib/server/composition";
import { currentPrincipalIfReachable } from "@/lib/server/current-principal";
import { loadEnv } from "@/lib/server/env";

export const metadata: Metadata = { title: "Sign in" };

/**
 * Stands alone, outside the console's shell. Already signed in: straight on to `next`. It renders
 * with the database down too, saying so (signing in needs it).
 */
export default async function SignInPage({
  searchParams,
}: {
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const params = await searchParams;
  const next = safeNextPath(typeof params.next === "string" ? params.next : undefined);
  const { principal, isDatabaseUnreachable } = await currentPrincipalIfReachable();
  if (principal !== null) redirect(next);
  const signedOut = params.signedOut === "1";
  const sso = ssoSettingsFromEnv();
  const isPasswordOn = loadEnv().PASSWORD_SIGN_IN === "on";
  const ssoFailure = describeSsoFailure(typeof params.sso === "string" ? params.sso : undefined);
  return (
    <main className="sign-in">
      <div className="sign-in-card panel">
        <div className="brand sign-in-brand">
          <span className="brand-mark" aria-hidden="true" />
          Limitplane
        </div>
        <h1>Sign in</h1>
        {isDatabaseUnreachable ? (
          <p className="notice notice-bad" role="alert" data-testid="database-unreachable">
            {DATABASE_UNAVAILABLE_MESSAGE} Signing in needs it. <a href="/status">Status</a>
          </p>
        ) : null}
        {signedOut ? (
          <p className="notice" role="status">
            You are signed out.
          </p>
        ) : null}
        {ssoFailure === null ? null : (
          <p className="notice notice-bad" role="alert" data-testid="sso-failure">
            {ssoFailure}
          </p>
        )}
        {sso === null ? null : (
          <p>
            <a
              className="button"
              href={`/auth/oidc/start?next=${encodeURIComponent(next)}`}
              data-testid="sso-sign-in"
            >
              Sign in with {sso.displayName}
            </a>
          </p>
        )}
        {isPasswordOn ? (
          <SignInForm next={next} />
        ) : (
          <details>
            <summary>Break-glass admin sign-in</summary>
            <p className="muted small">
              Password sign-in is off. Only the admins listed in BREAK_GLASS_ADMINS may use it, and
              every such sign-in is audited.
            </p>
            <SignInForm next={next} />
          </details>
        )}
        <p className="muted small">
          No account? An admin creates one (<code>npm run admin:create</code> for the first).
        </p>
      </div>
    </main>
  );
}
