/**
 * The shared store behind a bounded timeout and a circuit breaker, with the failure policy
 * answering whenever the store does not: every call returns a decision, none waits longer than
 * the timeout, and none waits at all while the circuit is open.
 */
import type { Clock } from "../limiter/clock";
import { monotonicClock } from "../limiter/clock";
import type { LimiterStore } from "../limiter/types";
import { CircuitBreaker } from "./circuit-breaker";
import type { FailurePolicy } from "./failure-policy";
import { callWithTimeout, systemTimers, type Timers } from "./timers";
import { type EnforcerDecision, type EnforcerInput, fromStoreDecision } from "./types";

export interface GuardedStoreOptions {
  /** The shared store (the Redis store in production). */
  readonly store: LimiterStore;
  /** Answers when the store does not. */
  readonly failurePolicy: FailurePolicy;
  /**
   * Longest wait for the store before the call is abandoned and the failure policy answers. A
   * healthy local Redis answers in about a millisecond at p99; the bound absorbs a GC pause or a
   * failover hiccup without letting a dead store hold requests for seconds.
   * @default 50
   */
  readonly timeoutMs?: number;
  /** @default a CircuitBreaker with its defaults, on `clock` */
  readonly breaker?: CircuitBreaker;
  /** Runs the timeout. @default systemTimers */
  readonly timers?: Timers;
  /** @default monotonicClock */
  readonly clock?: Clock;
  /**
   * Told about every failed call's error (not timeouts, not an open circuit), so the runtime can
   * log the cause once. The decision is already made when it is called.
   */
  readonly onStoreError?: (error: unknown) => void;
}

export class GuardedStore {
  readonly #store: LimiterStore;
  readonly #failurePolicy: FailurePolicy;
  readonly #timeoutMs: number;
  readonly #breaker: CircuitBreaker;
  readonly #timers: Timers;
  readonly #clock: Clock;
  readonly #onStoreError: ((error: unknown) => void) | undefined;

  constructor(options: GuardedStoreOptions) {
    this.#store = options.store;
    this.#failurePolicy = options.failurePolicy;
    this.#timeoutMs = options.timeoutMs ?? 50;
    if (!(this.#timeoutMs > 0 && this.#timeoutMs <= Number.MAX_SAFE_INTEGER)) {
      throw new RangeError(`timeoutMs must be a finite number > 0, got ${this.#timeoutMs}`);
    }
    this.#clock = options.clock ?? monotonicClock;
    this.#breaker = options.breaker ?? new CircuitBreaker({ clock: this.#clock });
    this.#timers = options.timers ?? systemTimers;
    this.#onStoreError = options.onStoreError;
  }

  get breaker(): CircuitBreaker {
    return this.#breaker;
  }

  /**
   * The store's decision, or the failure policy's when the circuit is open (at once, without
   * calling the store), the call fails, or it does not settle within `timeoutMs`. Rejects only on
   * a programmer mistake the failure policy refuses too (two checks sharing a bucket).
   */
  async decide(input: EnforcerInput): Promise<EnforcerDecision> {
    const permit = this.#breaker.tryAcquire();
    if (permit === null) {
      return this.#failurePolicy.decide(input, "circuit-open", this.#breaker.coolDownRemainingMs());
    }
    const result = await callWithTimeout(() => this.#store.decide(input), {
      timeoutMs: this.#timeoutMs,
      timers: this.#timers,
      clock: this.#clock,
    });
    switch (result.kind) {
      case "ok":
        this.#breaker.recordSuccess(permit);
        return fromStoreDecision(result.value);
      case "timeout":
        this.#breaker.recordFailure(permit);
        return this.#failurePolicy.decide(input, "timeout", this.#breaker.coolDownRemainingMs());
      case "error": {
        this.#breaker.recordFailure(permit);
        const decision = this.#failurePolicy.decide(
          input,
          "store-error",
          this.#breaker.coolDownRemainingMs(),
        );
        try {
          this.#onStoreError?.(result.error);
        } catch {
          // A logger that throws must not fail a request whose decision is already made.
        }
        return decision;
      }
      default: {
        const unknown: never = result;
        throw new TypeError(`unknown call result: ${JSON.stringify(unknown)}`);
      }
    }
  }
}
