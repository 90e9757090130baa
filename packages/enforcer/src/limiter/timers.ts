/**
 * Timers behind an interface, so a delay can be driven by a test instead of waited for: the
 * process's timers (`systemTimers`) and hand-moved ones for tests (`ManualTimers`). On the limiter
 * side because a store adapter schedules with them (the Redis store holds lease refills back for
 * a turn); the enforcer runtime uses the same ones.
 */
import type { Clock } from "./clock";

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
