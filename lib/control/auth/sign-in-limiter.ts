/**
 * Sign-in attempts, rate limited by our own limiter so that guessing is slow and strangers cannot
 * lock an operator out. Three token buckets (SIGN_IN_LIMITS):
 *
 * - per client address, every attempt: taken BEFORE the password is hashed, so a flood of guesses
 *   costs us a Redis round trip each, not 32 MiB of scrypt;
 * - per (account, address), failures only: one address guessing one account is slowed to its
 *   refill;
 * - per account, failures only, from everywhere. When it is spent the account is under attack:
 *   an address that has failed for this account lately (its pair bucket is not full) is refused,
 *   while an address that has not (the owner's, usually) may still try. So an attacker's guesses
 *   from many addresses slow each of those addresses to one guess per refill of its pair bucket,
 *   and never refuse the owner's correct password from an address of their own.
 *
 * A correct password costs nothing but its address attempt, so signing in and changing one's
 * password never use up the failure budgets. The failure buckets are read before the hash and
 * written after it; attempts for one (account, address) run one at a time in each instance, so
 * parallel guesses cannot all pass the read before the first failure is written (across N console
 * instances, at most N run at once).
 *
 * The buckets live in the shared store (Redis, keys under REDIS_KEY_PREFIX + "signin:"), so every
 * console instance counts the same attempts. If that store cannot answer, a bounded in-process
 * store takes over with the same limits: each instance then limits on its own (at worst the
 * limits multiply by the number of instances), which keeps sign-in possible during a Redis outage
 * (when operators most need the console) without leaving it unlimited.
 *
 * Account and pair keys are HMACs of the lower-cased email (and the address) under
 * SESSION_SECRET, so Redis never holds operators' addresses.
 */
import { createHmac } from "node:crypto";
import type {
  DecideInput,
  LayeredDecision,
  LimiterStore,
  TokenBucketLimit,
} from "@limitplane/enforcer/limiter";
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

/** Which bucket refused an attempt: the `limitedBy` detail of the 429. */
export type SignInLimitedBy = "address" | "pair" | "account";

export interface SignInLimiterOptions {
  /** The shared store (Redis in production). */
  readonly store: LimiterStore;
  /** Used when `store` is unavailable (StoreUnavailableError). @default a MemoryStore of 10 000 keys */
  readonly fallback?: LimiterStore;
  /** Keys account and pair buckets. */
  readonly secret: string;
  /** @default SIGN_IN_LIMITS */
  readonly limits?: SignInLimits;
  /** Told once per failure of the shared store (for logs). @default console.warn */
  readonly onStoreFailure?: (error: unknown) => void;
}

const MESSAGES: Record<SignInLimitedBy, string> = {
  address: "Too many sign-in attempts from your address.",
  pair: "Too many failed sign-ins for this account from your address.",
  account: "Too many failed sign-ins for this account from your address.",
};

export class SignInLimiter {
  readonly #store: LimiterStore;
  readonly #fallback: LimiterStore;
  readonly #secret: string;
  readonly #limits: SignInLimits;
  readonly #onStoreFailure: (error: unknown) => void;
  /** The attempt in flight per pair key, so that attempts of one pair run one at a time. */
  readonly #inFlight = new Map<string, Promise<unknown>>();

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
   * Runs `verify` (which hashes the password and says whether it matched) within the limits, and
   * counts a failure when it resolves false. Throws RATE_LIMITED (429, with Retry-After) without
   * calling `verify` when a bucket refuses.
   */
  async verify(attempt: SignInAttempt, verify: () => Promise<boolean>): Promise<boolean> {
    const address = attempt.address === null ? null : normalizeClientAddress(attempt.address);
    const accountKey = this.#key(attempt.email);
    const pairKey = this.#key(`${attempt.email}\n${address ?? "unknown"}`);
    await this.#take(`signin-a:${address ?? "unknown"}`, this.#limits.perAddress, "address");
    const previous = this.#inFlight.get(pairKey) ?? Promise.resolve();
    const run = previous
      .catch(() => undefined)
      .then(() => this.#verifyOnePair(accountKey, pairKey, verify));
    this.#inFlight.set(pairKey, run);
    try {
      return await run;
    } finally {
      if (this.#inFlight.get(pairKey) === run) this.#inFlight.delete(pairKey);
    }
  }

  async #verifyOnePair(
    accountKey: string,
    pairKey: string,
    verify: () => Promise<boolean>,
  ): Promise<boolean> {
    const pair = this.#input(`signin-p:${pairKey}`, this.#limits.perPair, "pair");
    const account = this.#input(`signin-e:${accountKey}`, this.#limits.perAccount, "account");
    this.#refuseUnless(await this.#ask(pair, "peek"), "pair");
    const accountNow = await this.#ask(account, "peek");
    if (!accountNow.allowed) {
      // Under attack: only an address with a full pair bucket (no recent failure) may try.
      const pairFull = await this.#ask({ ...pair, cost: this.#limits.perPair.capacity }, "peek");
      if (!pairFull.allowed) this.#refuseUnless(accountNow, "account");
    }
    const isMatch = await verify();
    if (!isMatch) {
      await this.#ask(pair, "decide");
      await this.#ask(account, "decide");
    }
    return isMatch;
  }

  #key(text: string): string {
    return createHmac("sha256", this.#secret).update(text).digest("hex").slice(0, 32);
  }

  #input(subject: string, limit: TokenBucketLimit, scope: SignInLimitedBy): DecideInput {
    return { subject, checks: [{ scope, limit, mode: "enforce" }] };
  }

  async #take(subject: string, limit: TokenBucketLimit, scope: SignInLimitedBy): Promise<void> {
    this.#refuseUnless(await this.#ask(this.#input(subject, limit, scope), "decide"), scope);
  }

  async #ask(input: DecideInput, how: "decide" | "peek"): Promise<LayeredDecision> {
    try {
      return await this.#store[how](input);
    } catch (error: unknown) {
      // Only an outage falls back; anything else is a bug and must surface.
      if (!(error instanceof StoreUnavailableError)) throw error;
      this.#onStoreFailure(error);
      return this.#fallback[how](input);
    }
  }

  #refuseUnless(decision: LayeredDecision, limitedBy: SignInLimitedBy): void {
    if (decision.allowed) return;
    const retryAfterSec = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
    throw new AppError(
      "RATE_LIMITED",
      `${MESSAGES[limitedBy]} Wait ${retryAfterSec} s and try again.`,
      {
        retryAfterSec,
        details: { limitedBy, retryAfterSec },
      },
    );
  }
}
