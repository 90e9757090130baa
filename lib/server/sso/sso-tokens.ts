/**
 * The provider's tokens for one console session (the refresh token that re-checks the role, the
 * access token for userinfo, the ID token the provider's sign-out is sent with as
 * `id_token_hint`), kept in the session's row (`Session.ssoTokens`) sealed with AES-256-GCM under
 * a key derived from SESSION_SECRET: whoever reads the database alone cannot use them, and an
 * altered value opens as nothing.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import { z } from "zod";

const ZSsoTokens = z.strictObject({
  refreshToken: z.string().min(1).max(8_000).nullable(),
  accessToken: z.string().min(1).max(8_000),
  idToken: z.string().min(1).max(16_000),
});
export type SsoTokens = z.infer<typeof ZSsoTokens>;

function keyOf(secret: string): Buffer {
  return Buffer.from(hkdfSync("sha256", secret, "lp-sso-tokens", "aes-256-gcm", 32));
}

export function sealSsoTokens(tokens: SsoTokens, secret: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", keyOf(secret), iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(tokens), "utf8"), cipher.final()]);
  const tag = cipher.getAuthTag();
  return ["v1", ...[iv, tag, body].map((part) => part.toString("base64url"))].join(".");
}

/** The tokens, or null when the value is missing, altered, sealed under another secret or malformed. */
export function openSsoTokens(sealed: string | null, secret: string): SsoTokens | null {
  if (sealed === null) return null;
  const [version, iv, tag, body, extra] = sealed.split(".");
  if (version !== "v1" || iv === undefined || tag === undefined || body === undefined) return null;
  if (extra !== undefined) return null;
  try {
    const decipher = createDecipheriv("aes-256-gcm", keyOf(secret), Buffer.from(iv, "base64url"));
    decipher.setAuthTag(Buffer.from(tag, "base64url"));
    const text = Buffer.concat([
      decipher.update(Buffer.from(body, "base64url")),
      decipher.final(),
    ]).toString("utf8");
    const parsed = ZSsoTokens.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
