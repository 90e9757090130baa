/**
 * Sign-in attempts, rate limited by our own limiter: per client address and per account, each a
 * token bucket (SIGN_IN_LIMITS). Checked BEFORE the password is hashed, so a flood of guesses
 * costs us a Redis round trip each, not 32 MiB of scrypt.
 *
 * The buckets live in the shared store (Redis, keys under REDIS_KEY_PREFIX + "signin:"), so every
 * console instance counts the same attempts. If that store cannot answer, a bounded in-process
 * store takes over with the same limits: each instance then limits on its own (at worst the
 * limits multiply by the number of instances), which keeps sign-in possible during a Redis outage
 * (when operators most need the console) without leaving it unlimited.
 *
 * The account's key is an HMAC of the lower-cased email under SESSION_SECRET, so Redis never
 * holds operators' addresses.
 */
import { createHmac } from "node:crypto";
import type { LimiterStore, TokenBucketLimit } from "@limitplane/enforcer/limiter";
import { MemoryStore, StoreUnavailableError } from "@limitplane/enforcer/limiter";
import { normalizeClientAddress } from "@limitplane/enforcer/policy";
import { AppError } from "../errors";
import { SIGN_IN_LIMITS, type SignInLimits } from "./auth-settings";

export interface SignInAttempt {
  /** The client's address as the request showed it; null when unknown. */
  readonly address: string | null;
  /** Lower-cased. */
  readonly email: string;
}

export interface SignInLimiterOptions {
  /** The shared store (Redis in production). */
  readonly store: LimiterStore;
  /** Used when `store` is unavailable (StoreUnavailableError). @default a MemoryStore of 10 000 keys */
  readonly fallback?: LimiterStore;
  /** Keys account buckets. */
  readonly secret: string;
  /** @default SIGN_IN_LIMITS */
  readonly limits?: SignInLimits;
  /** Told once per failure of the shared store (for logs). @default console.warn */
  readonly onStoreFailure?: (error: unknown) => void;
}

export class SignInLimiter {
  readonly #store: LimiterStore;
  readonly #fallback: LimiterStore;
  readonly #secret: string;
  readonly #limits: SignInLimits;
  readonly #onStoreFailure: (error: unknown) => void;

  constructor(options: SignInLimiterOptions) {
    this.#store = options.store;
    this.#fallback = options.fallback ?? new MemoryStore({ maxKeys: 10_000 });
    this.#secret = options.secret;
    this.#limits = options.limits ?? SIGN_IN_LIMITS;
    this.#onStoreFailure =
      options.onStoreFailure ??
      ((error) =>
        console.warn("sign-in limiter: shared store unavailable, limiting locally", error));
  }

  get limits(): SignInLimits {
    return this.#limits;
  }

  /**
   * Counts one attempt; throws RATE_LIMITED (429, with Retry-After) when either bucket is empty.
   * The address is checked first, so a blocked address does not drain the account's bucket.
   */
  async check(attempt: SignInAttempt): Promise<void> {
    const address = attempt.address === null ? null : normalizeClientAddress(attempt.address);
    await this.#take(`signin-a:${address ?? "unknown"}`, this.#limits.perAddress, "address");
    await this.#take(
      `signin-e:${this.#accountKey(attempt.email)}`,
      this.#limits.perAccount,
      "account",
    );
  }

  #accountKey(email: string): string {
    return createHmac("sha256", this.#secret).update(email).digest("hex").slice(0, 32);
  }

  async #take(
    subject: string,
    limit: TokenBucketLimit,
    what: "address" | "account",
  ): Promise<void> {
    const input = { subject, checks: [{ scope: what, limit, mode: "enforce" as const }] };
    let decision: Awaited<ReturnType<LimiterStore["decide"]>>;
    try {
      decision = await this.#store.decide(input);
    } catch (error: unknown) {
      // Only an outage falls back; anything else is a bug and must surface.
      if (!(error instanceof StoreUnavailableError)) throw error;
      this.#onStoreFailure(error);
      decision = await this.#fallback.decide(input);
    }
    if (decision.allowed) return;
    const retryAfterSec = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
    throw new AppError(
      "RATE_LIMITED",
      what === "address"
        ? `Too many sign-in attempts from your address. Wait ${retryAfterSec} s and try again.`
        : `Too many sign-in attempts for this account. Wait ${retryAfterSec} s and try again.`,
      { retryAfterSec, details: { limitedBy: what, retryAfterSec } },
    );
  }
}
