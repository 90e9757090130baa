/**
 * The signature of a webhook body: `Limitplane-Signature: t=<unix seconds>,v1=<hex>`, where the
 * hex is HMAC-SHA256 under the webhook's signing secret of `<t>.<body>` (the exact bytes sent).
 * A receiver recomputes it, compares in constant time, and refuses a `t` far from its own clock
 * (a replay). docs/audit-webhook.md shows a receiver.
 */
import { createHmac, timingSafeEqual } from "node:crypto";

export const SIGNATURE_HEADER = "limitplane-signature";

/** The header's value for `body` sent at `timestampSec`. */
export function signWebhookBody(secret: string, timestampSec: number, body: string): string {
  const mac = createHmac("sha256", secret).update(`${timestampSec}.${body}`).digest("hex");
  return `t=${timestampSec},v1=${mac}`;
}

/**
 * The signed time (unix seconds) when `header` is a valid signature of `body` under `secret`;
 * null when it is missing, malformed or wrong. The caller judges the time.
 */
export function verifyWebhookSignature(
  secret: string,
  header: string | undefined,
  body: string,
): number | null {
  const match = /^t=(\d{1,12}),v1=([0-9a-f]{64})$/.exec(header ?? "");
  if (match === null) return null;
  const timestampSec = Number(match[1]);
  const expected = Buffer.from(signWebhookBody(secret, timestampSec, body).slice(-64), "hex");
  const given = Buffer.from(match[2] ?? "", "hex");
  return given.length === expected.length && timingSafeEqual(given, expected) ? timestampSec : null;
}
