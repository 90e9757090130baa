/**
 * Password hashing with scrypt, a memory-hard function built into Node (no native addon to build).
 *
 * Parameters follow OWASP's scrypt guidance (N=2^15, r=8, p=3: 32 MiB and roughly 0.7 s of CPU
 * per hash on a small server). They are stored inside each hash, so raising them later keeps old
 * hashes verifiable and `needsRehash` says when to upgrade one at the next sign-in.
 *
 * Format: `scrypt$<N>$<r>$<p>$<salt base64url>$<hash base64url>`.
 */
import { randomBytes, scrypt as scryptCallback, timingSafeEqual } from "node:crypto";

export interface ScryptParams {
  /** CPU/memory cost, a power of two. */
  N: number;
  r: number;
  p: number;
}

export const DEFAULT_SCRYPT_PARAMS: ScryptParams = { N: 2 ** 15, r: 8, p: 3 };
const KEY_LENGTH = 32;
const SALT_LENGTH = 16;
/** Passwords longer than this are refused before hashing, so nobody can make us hash megabytes. */
export const MAX_PASSWORD_LENGTH = 256;
export const MIN_PASSWORD_LENGTH = 12;

function scrypt(password: string, salt: Buffer, params: ScryptParams): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scryptCallback(
      password.normalize("NFKC"),
      salt,
      KEY_LENGTH,
      { ...params, maxmem: 256 * params.N * params.r + 1024 * 1024 },
      (error, key) => (error ? reject(error) : resolve(key)),
    );
  });
}

export async function hashPassword(
  password: string,
  params: ScryptParams = DEFAULT_SCRYPT_PARAMS,
): Promise<string> {
  const salt = randomBytes(SALT_LENGTH);
  const key = await scrypt(password, salt, params);
  return [
    "scrypt",
    params.N,
    params.r,
    params.p,
    salt.toString("base64url"),
    key.toString("base64url"),
  ].join("$");
}

function parseHash(encoded: string): { params: ScryptParams; salt: Buffer; key: Buffer } | null {
  const parts = encoded.split("$");
  if (parts.length !== 6 || parts[0] !== "scrypt") return null;
  const [N, r, p] = parts.slice(1, 4).map(Number);
  if (N === undefined || r === undefined || p === undefined) return null;
  if (![N, r, p].every((n) => Number.isSafeInteger(n) && n > 0)) return null;
  return {
    params: { N, r, p },
    salt: Buffer.from(parts[4] ?? "", "base64url"),
    key: Buffer.from(parts[5] ?? "", "base64url"),
  };
}

/** True when `password` matches `encoded`. Constant-time comparison; false for a malformed hash. */
export async function verifyPassword(password: string, encoded: string): Promise<boolean> {
  if (password.length > MAX_PASSWORD_LENGTH) return false;
  const parsed = parseHash(encoded);
  if (!parsed || parsed.key.length !== KEY_LENGTH) return false;
  const key = await scrypt(password, parsed.salt, parsed.params);
  return timingSafeEqual(key, parsed.key);
}

/** True when `encoded` was made with weaker parameters than `params`. */
export function needsRehash(
  encoded: string,
  params: ScryptParams = DEFAULT_SCRYPT_PARAMS,
): boolean {
  const parsed = parseHash(encoded);
  if (!parsed) return true;
  return parsed.params.N < params.N || parsed.params.r < params.r || parsed.params.p < params.p;
}

/**
 * A hash of a random password, verified against when the account does not exist, so that
 * "no such operator" and "wrong password" take the same time. Made with the same parameters as
 * real hashes, once per process.
 */
const dummyHashes = new Map<string, Promise<string>>();
export function dummyPasswordHash(params: ScryptParams = DEFAULT_SCRYPT_PARAMS): Promise<string> {
  const key = `${params.N}$${params.r}$${params.p}`;
  let hash = dummyHashes.get(key);
  if (hash === undefined) {
    hash = hashPassword(randomBytes(16).toString("hex"), params);
    dummyHashes.set(key, hash);
  }
  return hash;
}
