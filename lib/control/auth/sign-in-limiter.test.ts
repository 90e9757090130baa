import {
  type DecideInput,
  type LayeredDecision,
  ManualClock,
  MemoryStore,
  StoreUnavailableError,
} from "@limitplane/enforcer/limiter";
import { describe, expect, it } from "vitest";
import { isAppError } from "../errors";
import { type SignInAttempt, SignInLimiter } from "./sign-in-limiter";

function limiterWithClock() {
  const clock = new ManualClock(1_000_000);
  const limiter = new SignInLimiter({ store: new MemoryStore({ clock }), secret: "s".repeat(32) });
  return { clock, limiter };
}

const right = () => Promise.resolve(true);
const wrong = () => Promise.resolve(false);

async function refusal(promise: Promise<unknown>) {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  if (!isAppError(error)) throw new Error(`expected an AppError, got ${String(error)}`);
  return error;
}

/** Whether the attempt reached the password check (true) or was refused by a limit (false). */
async function reached(limiter: SignInLimiter, attempt: SignInAttempt): Promise<boolean> {
  let isVerified = false;
  await limiter
    .verify(attempt, () => {
      isVerified = true;
      return wrong();
    })
    .catch((error: unknown) => {
      if (!isAppError(error) || error.code !== "RATE_LIMITED") throw error;
    });
  return isVerified;
}

const ada = "ada@example.com";

describe("SignInLimiter", () => {
  it("5 failures for one account from one address, then that address is refused for 30 s", async () => {
    const { clock, limiter } = limiterWithClock();
    for (let attempt = 0; attempt < 5; attempt++) {
      expect(await limiter.verify({ address: "10.0.0.1", email: ada }, wrong)).toBe(false);
    }
    const error = await refusal(limiter.verify({ address: "10.0.0.1", email: ada }, right));
    expect(error.code).toBe("RATE_LIMITED");
    expect(error.retryAfterSec).toBe(30);
    expect(error.message).toBe(
      "Too many failed sign-ins for this account from your address. Wait 30 s and try again.",
    );
    expect(error.details).toEqual({ limitedBy: "pair", retryAfterSec: 30 });
    clock.advance(30_000);
    expect(await limiter.verify({ address: "10.0.0.1", email: ada }, right)).toBe(true);
  });

  it("a correct password uses no failure budget: sign-ins never lock their owner out", async () => {
    const { limiter } = limiterWithClock();
    for (let attempt = 0; attempt < 15; attempt++) {
      expect(await limiter.verify({ address: "10.0.0.1", email: ada }, right)).toBe(true);
    }
    for (let attempt = 0; attempt < 5; attempt++) {
      expect(await reached(limiter, { address: "10.0.0.1", email: ada })).toBe(true);
    }
  });

  it("lets 20 attempts from one address through across accounts, then 1 per 10 s", async () => {
    const { clock, limiter } = limiterWithClock();
    for (let attempt = 0; attempt < 20; attempt++) {
      await limiter.verify({ address: "10.0.0.1", email: `user${attempt}@example.com` }, right);
    }
    const error = await refusal(
      limiter.verify({ address: "10.0.0.1", email: "new@example.com" }, right),
    );
    expect(error.retryAfterSec).toBe(10);
    expect(error.details).toEqual({ limitedBy: "address", retryAfterSec: 10 });
    clock.advance(10_000);
    await limiter.verify({ address: "10.0.0.1", email: "new@example.com" }, right);
  });

  it("100 wrong guesses from 50 addresses: the owner's correct password from a fresh address passes", async () => {
    const { limiter } = limiterWithClock();
    let verified = 0;
    for (let guess = 0; guess < 100; guess++) {
      if (await reached(limiter, { address: `203.0.113.${guess % 50}`, email: ada })) verified++;
    }
    // 10 failures spend the account's budget; then each address that has failed is refused.
    expect(verified).toBe(50);
    expect(await limiter.verify({ address: "198.51.100.7", email: ada }, right)).toBe(true);
  });

  it("under attack, an address that failed is refused for the account until its pair bucket refills", async () => {
    const { clock, limiter } = limiterWithClock();
    for (let guess = 0; guess < 10; guess++) {
      await reached(limiter, { address: `203.0.113.${guess}`, email: ada });
    }
    const error = await refusal(limiter.verify({ address: "203.0.113.1", email: ada }, right));
    expect(error.details).toEqual({ limitedBy: "account", retryAfterSec: 30 });
    // Another account from the same address is untouched.
    expect(await reached(limiter, { address: "203.0.113.1", email: "bo@example.com" })).toBe(true);
    clock.advance(30_000);
    expect(await reached(limiter, { address: "203.0.113.1", email: ada })).toBe(true);
    expect(await reached(limiter, { address: "203.0.113.1", email: ada })).toBe(false);
  });

  it("parallel wrong guesses from one address at one account: exactly 5 reach the password", async () => {
    const { limiter } = limiterWithClock();
    const results = await Promise.all(
      Array.from({ length: 12 }, () => reached(limiter, { address: "10.0.0.1", email: ada })),
    );
    expect(results.filter(Boolean)).toHaveLength(5);
  });

  it("falls back to a local store, with the same limits, when the shared one fails", async () => {
    const failures: unknown[] = [];
    const broken = {
      decide: (_input: DecideInput): Promise<LayeredDecision> =>
        Promise.reject(new StoreUnavailableError("down")),
      peek: (_input: DecideInput): Promise<LayeredDecision> =>
        Promise.reject(new StoreUnavailableError("down")),
    };
    const limiter = new SignInLimiter({
      store: broken,
      secret: "s".repeat(32),
      onStoreFailure: (error) => failures.push(error),
    });
    for (let attempt = 0; attempt < 5; attempt++) {
      await limiter.verify({ address: "10.0.0.1", email: ada }, wrong);
    }
    await expect(limiter.verify({ address: "10.0.0.1", email: ada }, right)).rejects.toThrow(
      /for this account from your address/,
    );
    expect(failures.length).toBeGreaterThan(0);
  });

  it("a store error that is not an outage is a bug: it surfaces, nothing falls back", async () => {
    const buggy = {
      decide: (): Promise<LayeredDecision> => Promise.reject(new TypeError("bad reply")),
      peek: (): Promise<LayeredDecision> => Promise.reject(new TypeError("bad reply")),
    };
    const limiter = new SignInLimiter({ store: buggy, secret: "s".repeat(32) });
    await expect(limiter.verify({ address: null, email: ada }, right)).rejects.toThrow(TypeError);
  });
});
