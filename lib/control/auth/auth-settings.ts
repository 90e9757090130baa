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

/**
 * The sign-in limits (sign-in-limiter.ts). Only `perAddress` counts every attempt, before the
 * password is hashed; the other two count failures (a wrong password, or no such account), so a
 * correct sign-in or password change never uses them up.
 */
export interface SignInLimits {
  /** Attempts per client address, successes included. @default 20 attempts, then 1 per 10 s */
  readonly perAddress: TokenBucketLimit;
  /**
   * Failures for one account from one client address. @default 5 failures, then 1 per 30 s
   */
  readonly perPair: TokenBucketLimit;
  /**
   * Failures for one account from every address together (the email given, whether or not it
   * exists). Once spent, only an address whose `perPair` bucket is full (it has not failed for this
   * account lately) may still try. @default 10 failures, then 1 per 30 s
   */
  readonly perAccount: TokenBucketLimit;
}

export const SIGN_IN_LIMITS: SignInLimits = {
  perAddress: { algorithm: "token-bucket", capacity: 20, refillPerSec: 1 / 10 },
  perPair: { algorithm: "token-bucket", capacity: 5, refillPerSec: 1 / 30 },
  perAccount: { algorithm: "token-bucket", capacity: 10, refillPerSec: 1 / 30 },
};

export const TOUCH_INTERVAL_MS = 60_000;
