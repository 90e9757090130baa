/**
 * The bounded wait for a store call: the call is raced against a timer (`limiter/timers.ts`), and
 * when the timer wins the call is abandoned (its eventual result or error is swallowed), never
 * awaited.
 */
import type { Clock } from "../limiter/clock";
import { monotonicClock } from "../limiter/clock";
import { systemTimers, type TimerHandle, type Timers } from "../limiter/timers";

/** How a bounded call ended. Never a thrown error: the caller decides what each means. */
export type BoundedResult<T> =
  | { readonly kind: "ok"; readonly value: T; readonly elapsedMs: number }
  | { readonly kind: "timeout"; readonly elapsedMs: number }
  | { readonly kind: "error"; readonly error: unknown; readonly elapsedMs: number };

/** Options of {@link callWithTimeout}. */
export interface CallWithTimeoutOptions {
  /**
   * How long to wait before abandoning the call, unless `isWorthWaiting` says to keep waiting.
   * Must be > 0.
   */
  readonly timeoutMs: number;
  /**
   * The longest wait in all, when `isWorthWaiting` answers true at `timeoutMs`. Must be at least
   * `timeoutMs`.
   * @default timeoutMs
   */
  readonly maxWaitMs?: number;
  /**
   * Asked once, when `timeoutMs` has passed without an answer: true to keep waiting up to
   * `maxWaitMs` (the callee is reachable and merely slow), false to give up now.
   * @default () => false
   */
  readonly isWorthWaiting?: () => boolean;
  /** @default systemTimers */
  readonly timers?: Timers;
  /** Measures `elapsedMs`. @default monotonicClock */
  readonly clock?: Clock;
}

/**
 * Starts `call` and settles with its result, its error, or a timeout, whichever comes first: the
 * timeout is `timeoutMs`, or `maxWaitMs` in all when `isWorthWaiting()` says at `timeoutMs` that
 * the callee is only slow. Never rejects. On a timeout the call's promise is abandoned: a handler
 * is attached so a late rejection is not reported as unhandled, and nothing waits for it any
 * more. The timer is cancelled as soon as the call settles. A `call` that throws synchronously
 * counts as an error.
 *
 * A timer that fires is never believed at once: the verdict waits for the I/O callbacks of the
 * current event-loop turn (`timers.defer`), so a reply that reached the socket while this
 * process was busy wins over the timer that fired late because of it.
 */
export function callWithTimeout<T>(
  call: () => Promise<T>,
  options: CallWithTimeoutOptions,
): Promise<BoundedResult<T>> {
  const { timeoutMs } = options;
  if (!(timeoutMs > 0 && timeoutMs <= Number.MAX_SAFE_INTEGER)) {
    throw new RangeError(`timeoutMs must be a finite number > 0, got ${timeoutMs}`);
  }
  const maxWaitMs = options.maxWaitMs ?? timeoutMs;
  if (!(maxWaitMs >= timeoutMs && maxWaitMs <= Number.MAX_SAFE_INTEGER)) {
    throw new RangeError(`maxWaitMs must be a finite number >= timeoutMs, got ${maxWaitMs}`);
  }
  const clock = options.clock ?? monotonicClock;
  const startedAtMs = clock.nowMs();
  let pending: Promise<T>;
  try {
    pending = call();
  } catch (error: unknown) {
    return Promise.resolve({
      kind: "error",
      error,
      elapsedMs: Math.max(0, clock.nowMs() - startedAtMs),
    });
  }
  return new Promise<BoundedResult<T>>((resolve) => {
    new BoundedCall(pending, resolve, options, clock, startedAtMs, maxWaitMs);
  });
}

/**
 * One call of {@link callWithTimeout} in flight: its timer, and which of the call and the timer
 * settled it. A class whose callbacks are written inline, where closures given names would do:
 * every store call makes one, and under tsx (esbuild's `keepNames`) each named closure defines its
 * `name` property when it is made (about a microsecond a store call, for three of them).
 */
class BoundedCall<T> {
  readonly #resolve: (result: BoundedResult<T>) => void;
  readonly #options: CallWithTimeoutOptions;
  readonly #timers: Timers;
  readonly #clock: Clock;
  readonly #startedAtMs: number;
  readonly #maxWaitMs: number;
  #timer: TimerHandle;
  #isSettled = false;
  #hasExtended = false;

  constructor(
    pending: Promise<T>,
    resolve: (result: BoundedResult<T>) => void,
    options: CallWithTimeoutOptions,
    clock: Clock,
    startedAtMs: number,
    maxWaitMs: number,
  ) {
    this.#resolve = resolve;
    this.#options = options;
    this.#timers = options.timers ?? systemTimers;
    this.#clock = clock;
    this.#startedAtMs = startedAtMs;
    this.#maxWaitMs = maxWaitMs;
    this.#timer = this.#timers.setTimer(() => this.#fired(), options.timeoutMs);
    pending.then(
      (value) => {
        if (!this.#isSettled) this.#answered({ kind: "ok", value, elapsedMs: this.#elapsedMs() });
      },
      (error: unknown) => {
        if (!this.#isSettled)
          this.#answered({ kind: "error", error, elapsedMs: this.#elapsedMs() });
      },
    );
  }

  #elapsedMs(): number {
    return Math.max(0, this.#clock.nowMs() - this.#startedAtMs);
  }

  #answered(result: BoundedResult<T>): void {
    this.#isSettled = true;
    this.#timer.cancel();
    this.#resolve(result);
  }

  /**
   * Timers run before I/O callbacks in an event-loop turn. When the loop was busy (a burst of
   * requests, other processes on the CPU), the timer can fire late while the reply already sits
   * in the socket: the verdict is reached after this turn's I/O, so loop lag alone does not turn
   * an answered call into a timeout (and a failure-policy decision).
   */
  #fired(): void {
    if (this.#isSettled) return;
    if (this.#timers.defer === undefined) this.#judge();
    else this.#timers.defer(() => this.#judge());
  }

  #judge(): void {
    if (this.#isSettled) return;
    const { timeoutMs, isWorthWaiting } = this.#options;
    if (!this.#hasExtended && this.#maxWaitMs > timeoutMs && (isWorthWaiting?.() ?? false)) {
      this.#hasExtended = true;
      this.#timer = this.#timers.setTimer(
        () => this.#fired(),
        Math.max(0, this.#maxWaitMs - this.#elapsedMs()),
      );
      return;
    }
    this.#isSettled = true;
    this.#resolve({ kind: "timeout", elapsedMs: this.#elapsedMs() });
  }
}
