/**
 * The character sets of every identifier the policy model hands to other systems. They are chosen
 * so that a name can sit, unescaped and unambiguous, in a scope (`customer:C/endpoint:E`), an HTTP
 * header, a Prometheus label, a URL path segment and a Redis key with a Cluster hash tag:
 * no `/`, no whitespace, no quotes, no braces, no control characters.
 */

/**
 * Tier and endpoint class names: 1 to 63 characters of `a-z`, `0-9`, `_` and `-`, starting with a
 * letter or a digit. Lowercase only, so `Pro` and `pro` can never be two tiers.
 */
export const NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/**
 * Customer ids as platforms issue them: 1 to 128 characters of `A-Z a-z 0-9 . _ : @ -`, starting
 * with a letter or a digit (so `.` and `..` are never ids: they would be rewritten in a URL path).
 * `:` is allowed (`org:acme`); the scope grammar stays unambiguous because `/` is not.
 */
export const CUSTOMER_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/;

/**
 * Ids of incident overrides and dry-run candidates: 1 to 64 characters of `A-Z a-z 0-9 _ -`,
 * starting with a letter or a digit. UUIDs and cuids fit.
 */
export const RECORD_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/** Whether `value` is a valid tier or endpoint class name (see {@link NAME_PATTERN}). */
export function isName(value: string): boolean {
  return NAME_PATTERN.test(value);
}

/** Whether `value` is a valid customer id (see {@link CUSTOMER_ID_PATTERN}). */
export function isCustomerId(value: string): boolean {
  return CUSTOMER_ID_PATTERN.test(value);
}

/** Whether `value` is a valid incident override or dry-run candidate id. */
export function isRecordId(value: string): boolean {
  return RECORD_ID_PATTERN.test(value);
}

/**
 * Whether `text` holds a character that must never reach a screen or a log line from typed input:
 * C0 and C1 control characters (including newlines and tabs), line and paragraph separators, and
 * the bidirectional formatting characters that can make text display differently from what it
 * contains ("Trojan Source").
 */
export function hasForbiddenCharacter(text: string): boolean {
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) return true;
    if (code === 0x061c || code === 0x200e || code === 0x200f) return true;
    if (code === 0x2028 || code === 0x2029) return true;
    if ((code >= 0x202a && code <= 0x202e) || (code >= 0x2066 && code <= 0x2069)) return true;
  }
  return false;
}
