/**
 * What the provider vouches for about an identity (lib/server/sso/oidc-flow.ts reads it from the
 * checked tokens), and the role re-check's interface (recheck-sso-session.ts), apart from the
 * services so AuthDeps can name them.
 */
import { z } from "zod";
import { ZOperatorEmail } from "../operator/operator-record";

export const ZSsoIdentity = z.strictObject({
  issuer: z.string().min(1).max(500),
  subject: z.string().min(1, { error: "the provider sent an empty sub" }).max(500),
  email: ZOperatorEmail.nullable(),
  isEmailVerified: z.boolean(),
  name: z.string().trim().max(200).nullable(),
  /** From the role claim (sso-settings.ts `roleFromClaims`); null: no role granted. */
  role: z.enum(["viewer", "operator", "admin"]).nullable(),
});
export type SsoIdentity = z.input<typeof ZSsoIdentity>;

/** What the provider said of a session's identity (lib/server/sso/oidc-flow.ts). */
export type SsoRecheckVerdict =
  | {
      readonly kind: "confirmed";
      readonly identity: SsoIdentity;
      /** The provider's new tokens, sealed, to store in place of the old. */
      readonly sealedTokens: string;
    }
  | { readonly kind: "refused"; readonly reason: string }
  | { readonly kind: "unreachable"; readonly reason: string };

/** Asks the provider about a session's identity; the adapter lives in lib/server/sso. */
export interface SsoRechecker {
  /** How often a session's role is confirmed at the provider (OIDC_RECHECK_MINUTES). */
  readonly intervalMs: number;
  /**
   * What an unreachable provider does to a session whose role has gone unconfirmed for two
   * intervals (OIDC_RECHECK_OUTAGE). @default "end-session"
   */
  readonly onOutage: "end-session" | "keep-session";
  check(sealedTokens: string | null): Promise<SsoRecheckVerdict>;
}
