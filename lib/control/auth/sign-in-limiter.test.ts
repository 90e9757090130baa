import {
  type DecideInput,
  type LayeredDecision,
  ManualClock,
  MemoryStore,
  StoreUnavailableError,
} from "@limitplane/enforcer/limiter";
import { describe, expect, it } from "vitest";
import { isAppError } from "../errors";
import { SignInLimiter } from "./sign-in-limiter";

function limiterWithClock() {
  const clock = new ManualClock(1_000_000);
  const limiter = new SignInLimiter({ store: new MemoryStore({ clock }), secret: "s".repeat(32) });
  return { clock, limiter };
}

async function refusal(promise: Promise<unknown>) {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  if (!isAppError(error)) throw new Error(`expected an AppError, got ${String(error)}`);
  return error;
}

describe("SignInLimiter", () => {
  it("lets 5 attempts at one account through, then refuses with a Retry-After of 30 s", async () => {
    const { limiter } = limiterWithClock();
    for (let attempt = 0; attempt < 5; attempt++) {
      await limiter.check({ address: `10.0.0.${attempt}`, email: "ada@example.com" });
    }
    const error = await refusal(limiter.check({ address: "10.0.0.9", email: "ada@example.com" }));
    expect(error.code).toBe("RATE_LIMITED");
    expect(error.retryAfterSec).toBe(30);
    expect(error.message).toBe(
      "Too many sign-in attempts for this account. Wait 30 s and try again.",
    );
  });

  it("one account's refill is one attempt per 30 s", async () => {
    const { clock, limiter } = limiterWithClock();
    for (let attempt = 0; attempt < 5; attempt++) {
      await limiter.check({ address: "10.0.0.1", email: "ada@example.com" });
    }
    clock.advance(30_000);
    await limiter.check({ address: "10.0.0.1", email: "ada@example.com" });
    await expect(limiter.check({ address: "10.0.0.1", email: "ada@example.com" })).rejects.toThrow(
      /for this account/,
    );
  });

  it("lets 20 attempts from one address through across accounts, then 1 per 10 s", async () => {
    const { clock, limiter } = limiterWithClock();
    for (let attempt = 0; attempt < 20; attempt++) {
      await limiter.check({ address: "10.0.0.1", email: `user${attempt}@example.com` });
    }
    const error = await refusal(limiter.check({ address: "10.0.0.1", email: "new@example.com" }));
    expect(error.retryAfterSec).toBe(10);
    expect(error.details).toEqual({ limitedBy: "address", retryAfterSec: 10 });
    clock.advance(10_000);
    await limiter.check({ address: "10.0.0.1", email: "new@example.com" });
  });

  it("a refused address does not drain the account's bucket", async () => {
    const { limiter } = limiterWithClock();
    for (let attempt = 0; attempt < 20; attempt++) {
      await limiter.check({ address: "10.0.0.1", email: `user${attempt}@example.com` });
    }
    for (let attempt = 0; attempt < 10; attempt++) {
      await expect(
        limiter.check({ address: "10.0.0.1", email: "ada@example.com" }),
      ).rejects.toThrow(/from your address/);
    }
    for (let attempt = 0; attempt < 5; attempt++) {
      await limiter.check({ address: "10.0.0.2", email: "ada@example.com" });
    }
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
      await limiter.check({ address: "10.0.0.1", email: "ada@example.com" });
    }
    await expect(limiter.check({ address: "10.0.0.1", email: "ada@example.com" })).rejects.toThrow(
      /for this account/,
    );
    expect(failures.length).toBeGreaterThan(0);
  });

  it("a store error that is not an outage is a bug: it surfaces, nothing falls back", async () => {
    const buggy = {
      decide: (): Promise<LayeredDecision> => Promise.reject(new TypeError("bad reply")),
      peek: (): Promise<LayeredDecision> => Promise.reject(new TypeError("bad reply")),
    };
    const limiter = new SignInLimiter({ store: buggy, secret: "s".repeat(32) });
    await expect(limiter.check({ address: null, email: "ada@example.com" })).rejects.toThrow(
      TypeError,
    );
  });
});
