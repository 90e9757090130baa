/**
 * What the sign-in page says after a failed single sign-on (`/sign-in?sso=<reason>`, set by
 * lib/server/sso/oidc-flow.ts). A fixed sentence per reason: the query string cannot put words
 * of its own on the page.
 */
const MESSAGES: Readonly<Record<string, string>> = {
  expired:
    "The sign-in through your identity provider expired or was started in another browser. Try again.",
  "refused-by-provider": "Your identity provider did not sign you in.",
  "check-failed":
    "The identity provider's answer failed its checks (state, nonce or token), so it was refused. Try again; if it keeps failing, tell an admin.",
  "provider-unreachable":
    "The identity provider could not be reached. Try again in a moment, or ask an admin.",
  "no-role":
    "Your groups at the identity provider grant no role in this console. Ask an admin to add you to one.",
  "not-linked":
    "An account with your email exists, and it could not be linked to your identity provider's account (the provider has not verified the email, or it is linked to someone else). Ask an admin.",
  disabled: "This operator is disabled. Ask an admin to enable it.",
  "not-configured": "Single sign-on is not configured on this console.",
};

export function describeSsoFailure(reason: string | undefined): string | null {
  if (reason === undefined) return null;
  return MESSAGES[reason] ?? "Signing in through your identity provider failed. Try again.";
}
