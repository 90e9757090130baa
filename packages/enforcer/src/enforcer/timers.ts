/**
 * Timers behind an interface, so a timeout can be driven by a test instead of waited for, and the
 * bounded wait for a store call: the call is raced against a timer, and when the timer wins the
 * call is abandoned (its eventual result or error is swallowed), never awaited.
 */
import type { Clock } from "../limiter/clock";
import { monotonicClock } from "../limiter/clock";

/** A scheduled callback that can be cancelled. Cancelling twice, or after it ran, does nothing. */
export interface TimerHandle {
  cancel(): void;
}

/** Where delayed callbacks come from. */
export interface Timers {
  /** Runs `callback` once, `delayMs` from now (at the earliest). */
  setTimer(callback: () => void, delayMs: number): TimerHandle;
  /**
   * Runs `callback` after the I/O callbacks of the current event-loop turn (`setImmediate`).
   * Absent: at once.
   */
  defer?(callback: () => void): void;
}

/**
 * The process's timers. The timer is unref'd: a pending store timeout must not keep a gateway
 * process alive on shutdown.
 */
export const systemTimers: Timers = {
  setTimer(callback, delayMs) {
    const timer = setTimeout(callback, delayMs);
    if (typeof timer === "object" && timer !== null && "unref" in timer) timer.unref();
    return new SystemTimer(timer);
  },
  defer(callback) {
    setImmediate(callback);
  },
};

/**
 * A handle on one of the process's timers. A class, not a `{ cancel: () => ... }` literal: a store
 * call sets a timer, and under tsx (esbuild's `keepNames`) a function literal given a name
 * defines its `name` property each time it is made, which cost more than the rest of the handle.
 */
class SystemTimer implements TimerHandle {
  readonly #timer: ReturnType<typeof setTimeout>;

  constructor(timer: ReturnType<typeof setTimeout>) {
    this.#timer = timer;
  }

  cancel(): void {
    clearTimeout(this.#timer);
  }
}

interface ManualTimer {
  readonly dueMs: number;
  readonly sequence: number;
  readonly callback: () => void;
  isCancelled: boolean;
}

/**
 * A clock and timers that move only when told to, for tests: `advance(ms)` moves time forward and
 * runs every timer that fell due, in due order (ties in the order they were set), with the clock
 * reading each timer's due time while it runs.
 */
export class ManualTimers implements Timers, Clock {
  #nowMs: number;
  #sequence = 0;
  #timers: ManualTimer[] = [];

  /** @param startMs the first reading. @default 0 */
  constructor(startMs = 0) {
    this.#nowMs = startMs;
  }

  nowMs(): number {
    return this.#nowMs;
  }

  setTimer(callback: () => void, delayMs: number): TimerHandle {
    const timer: ManualTimer = {
      dueMs: this.#nowMs + Math.max(0, delayMs),
      sequence: this.#sequence++,
      callback,
      isCancelled: false,
    };
    this.#timers.push(timer);
    return {
      cancel: () => {
        timer.isCancelled = true;
      },
    };
  }

  /** Timers set and neither run nor cancelled. */
  get pendingCount(): number {
    return this.#timers.filter((timer) => !timer.isCancelled).length;
  }

  /** Moves time forward by `durationMs`, running the timers that fall due on the way. */
  advance(durationMs: number): void {
    if (!(durationMs >= 0)) throw new RangeError(`advance by a duration >= 0, got ${durationMs}`);
    const targetMs = this.#nowMs + durationMs;
    for (;;) {
      const next = this.#nextDue(targetMs);
      if (next === undefined) break;
      this.#timers = this.#timers.filter((timer) => timer !== next);
      this.#nowMs = next.dueMs;
      next.callback();
    }
    this.#timers = this.#timers.filter((timer) => !timer.isCancelled);
    this.#nowMs = targetMs;
  }

  #nextDue(targetMs: number): ManualTimer | undefined {
    let next: ManualTimer | undefined;
    for (const timer of this.#timers) {
      if (timer.isCancelled || timer.dueMs > targetMs) continue;
      if (
        next === undefined ||
        timer.dueMs < next.dueMs ||
        (timer.dueMs === next.dueMs && timer.sequence < next.sequence)
      ) {
        next = timer;
      }
    }
    return next;
  }
}

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
