/**
 * The numbers of authentication, in one place: session lifetimes, how often "last seen" is
 * written, and the sign-in rate limits. The defaults are what the README documents.
 */
import type { TokenBucketLimit } from "@limitplane/enforcer/limiter";

export interface SessionSettings {
  /** A session ends this long after sign-in, however active. @default 12 h (SESSION_LIFETIME_MINUTES) */
  readonly lifetimeMs: number;
  /** A session unused for this long ends. @default 2 h (SESSION_IDLE_MINUTES) */
  readonly idleMs: number;
  /**
   * `lastSeenAt` / `lastUsedAt` are written only when older than this, so a busy client costs one
   * write a minute, not one per request. The idle limit is therefore exact to this much.
   * @default 60_000
   */
  readonly touchIntervalMs: number;
}

/** Attempts, not failures: the limit is checked before the password is (see sign-in.ts). */
export interface SignInLimits {
  /** Per client address. @default 20 attempts, then 1 per 10 s */
  readonly perAddress: TokenBucketLimit;
  /** Per account (the email given, whether or not it exists). @default 5 attempts, then 1 per 30 s */
  readonly perAccount: TokenBucketLimit;
}

export const SIGN_IN_LIMITS: SignInLimits = {
  perAddress: { algorithm: "token-bucket", capacity: 20, refillPerSec: 1 / 10 },
  perAccount: { algorithm: "token-bucket", capacity: 5, refillPerSec: 1 / 30 },
};

export const TOUCH_INTERVAL_MS = 60_000;
