/**
 * Random bearer secrets (session tokens, API tokens). Only a SHA-256 of each is stored (the
 * policy's `sha256Hex`, lowercase hex of the UTF-8 bytes), so a read of the database does not
 * yield a usable credential; 256 bits of randomness make a slow hash unnecessary.
 *
 * API tokens look like `lp_<8 char prefix>_<43 char secret>`: the prefix is stored in clear so
 * operators can recognise a token in a list, and secret scanners can match the `lp_` shape.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import { sha256Hex } from "@limitplane/enforcer/policy";

export function newSessionToken(): string {
  return randomBytes(32).toString("base64url");
}

export interface NewApiToken {
  /** Shown to the creator once, never stored. */
  token: string;
  /** Stored and listed: identifies the token without revealing it. */
  prefix: string;
  /** Stored: what an incoming token is compared against. */
  hash: string;
}

const ALPHANUMERIC = "abcdefghijklmnopqrstuvwxyz0123456789";

function randomAlphanumeric(length: number): string {
  const bytes = randomBytes(length);
  let out = "";
  // 256 is not a multiple of 36; the slight bias on 8 prefix characters only affects display.
  for (const byte of bytes) out += ALPHANUMERIC[byte % ALPHANUMERIC.length];
  return out;
}

export function newApiToken(): NewApiToken {
  const prefix = `lp_${randomAlphanumeric(8)}`;
  const token = `${prefix}_${randomBytes(32).toString("base64url")}`;
  return { token, prefix, hash: sha256Hex(token) };
}

export const API_TOKEN_PATTERN = /^lp_[a-z0-9]{8}_[A-Za-z0-9_-]{43}$/;

/** The stored prefix of a presented token, or null when it cannot be one of ours. */
export function apiTokenPrefix(token: string): string | null {
  return API_TOKEN_PATTERN.test(token) ? token.slice(0, 11) : null;
}

export function hashesEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, "hex");
  const right = Buffer.from(b, "hex");
  return left.length === right.length && timingSafeEqual(left, right);
}
