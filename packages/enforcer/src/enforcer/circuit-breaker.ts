/**
 * A circuit breaker for the shared store, so a dead Redis does not cost every request the timeout.
 *
 *   closed ──(N consecutive failures, or failure rate over threshold in the window)──▶ open
 *   open ──(cool-down elapsed; checked lazily on the next call)──▶ half-open
 *   half-open ──(the one probe succeeds)──▶ closed
 *   half-open ──(the probe fails)──▶ open (a new cool-down)
 *
 * No timers: every transition happens when the breaker is asked, on the injected clock, so tests
 * drive it by moving a clock and production pays nothing while idle. Recovery is automatic: the
 * first request after the cool-down becomes the probe.
 *
 * Callers ask for a permit before calling the store and report its outcome with the permit. A
 * permit carries the breaker's generation (bumped on every open and close), so an outcome that
 * arrives after the state changed (a slow call from before the circuit opened) is ignored rather
 * than closing or re-opening the circuit on stale evidence.
 */
import type { Clock } from "../limiter/clock";
import { monotonicClock } from "../limiter/clock";

export type BreakerState = "closed" | "open" | "half-open";

/** Permission to make one store call; report its outcome with `recordSuccess`/`recordFailure`. */
export interface BreakerPermit {
  readonly generation: number;
  readonly isProbe: boolean;
}

export interface CircuitBreakerOptions {
  /**
   * Consecutive failures that open the circuit. Catches a store that went away at once.
   * @default 5
   */
  readonly consecutiveFailuresToOpen?: number;
  /**
   * Share of failed calls within `windowMs` that opens the circuit, from 0 (exclusive) to 1.
   * Catches a store that fails intermittently, which never produces a long streak.
   * @default 0.5
   */
  readonly failureRateToOpen?: number;
  /**
   * Calls within `windowMs` needed before the failure rate counts, so two failures out of three
   * calls at a quiet moment do not open the circuit.
   * @default 20
   */
  readonly minimumCallsInWindow?: number;
  /**
   * Span over which the failure rate is measured, kept as 10 rolling slots.
   * @default 10_000
   */
  readonly windowMs?: number;
  /**
   * How long the circuit stays open, answering without calling the store, before one probe is let
   * through. Short, because a probe costs at most one request's timeout, and every millisecond
   * open after the store recovered is a degraded decision.
   * @default 2_000
   */
  readonly coolDownMs?: number;
  /** Durations come from here. @default monotonicClock */
  readonly clock?: Clock;
}

/** What the breaker knows, for metrics and the enforcer's status report. */
export interface BreakerSnapshot {
  readonly state: BreakerState;
  readonly consecutiveFailures: number;
  readonly callsInWindow: number;
  readonly failuresInWindow: number;
  /** How many times the circuit has opened since the breaker was made. */
  readonly openCount: number;
  /** Until the next probe may go, when open; 0 otherwise. */
  readonly coolDownRemainingMs: number;
}

const WINDOW_SLOTS = 10;

export class CircuitBreaker {
  readonly #consecutiveFailuresToOpen: number;
  readonly #failureRateToOpen: number;
  readonly #minimumCallsInWindow: number;
  readonly #slotMs: number;
  readonly #coolDownMs: number;
  readonly #clock: Clock;

  #state: BreakerState = "closed";
  #generation = 0;
  #consecutiveFailures = 0;
  #openedAtMs = 0;
  #openCount = 0;
  /** When the half-open probe was let through; null while none is out. */
  #probeStartedAtMs: number | null = null;
  readonly #slotIndex = new Float64Array(WINDOW_SLOTS).fill(Number.NaN);
  readonly #slotCalls = new Float64Array(WINDOW_SLOTS);
  readonly #slotFailures = new Float64Array(WINDOW_SLOTS);

  constructor(options: CircuitBreakerOptions = {}) {
    this.#consecutiveFailuresToOpen = options.consecutiveFailuresToOpen ?? 5;
    this.#failureRateToOpen = options.failureRateToOpen ?? 0.5;
    this.#minimumCallsInWindow = options.minimumCallsInWindow ?? 20;
    const windowMs = options.windowMs ?? 10_000;
    this.#coolDownMs = options.coolDownMs ?? 2_000;
    this.#clock = options.clock ?? monotonicClock;
    if (!Number.isInteger(this.#consecutiveFailuresToOpen) || this.#consecutiveFailuresToOpen < 1) {
      throw new RangeError(
        `consecutiveFailuresToOpen must be a whole number >= 1, got ${this.#consecutiveFailuresToOpen}`,
      );
    }
    if (!(this.#failureRateToOpen > 0 && this.#failureRateToOpen <= 1)) {
      throw new RangeError(`failureRateToOpen must be in (0, 1], got ${this.#failureRateToOpen}`);
    }
    if (!Number.isInteger(this.#minimumCallsInWindow) || this.#minimumCallsInWindow < 1) {
      throw new RangeError(
        `minimumCallsInWindow must be a whole number >= 1, got ${this.#minimumCallsInWindow}`,
      );
    }
    if (!(windowMs >= WINDOW_SLOTS && windowMs <= Number.MAX_SAFE_INTEGER)) {
      throw new RangeError(`windowMs must be a finite number >= ${WINDOW_SLOTS}, got ${windowMs}`);
    }
    if (!(this.#coolDownMs > 0 && this.#coolDownMs <= Number.MAX_SAFE_INTEGER)) {
      throw new RangeError(`coolDownMs must be a finite number > 0, got ${this.#coolDownMs}`);
    }
    this.#slotMs = windowMs / WINDOW_SLOTS;
  }

  /** The state now: an open circuit whose cool-down has elapsed reads as half-open. */
  get state(): BreakerState {
    this.#refresh(this.#clock.nowMs());
    return this.#state;
  }

  /**
   * A permit to call the store, or null to answer without it. Closed: always. Open: never.
   * Half-open: one probe at a time; a probe not reported within a cool-down is presumed lost
   * (its caller never reported) and another is let through, so the breaker cannot stick.
   */
  tryAcquire(): BreakerPermit | null {
    const nowMs = this.#clock.nowMs();
    this.#refresh(nowMs);
    switch (this.#state) {
      case "closed":
        return { generation: this.#generation, isProbe: false };
      case "open":
        return null;
      case "half-open": {
        if (this.#probeStartedAtMs !== null && nowMs - this.#probeStartedAtMs < this.#coolDownMs) {
          return null;
        }
        this.#probeStartedAtMs = nowMs;
        return { generation: this.#generation, isProbe: true };
      }
      default: {
        const unknown: never = this.#state;
        throw new TypeError(`unknown breaker state: ${String(unknown)}`);
      }
    }
  }

  /** The store answered. A probe's success closes the circuit. */
  recordSuccess(permit: BreakerPermit): void {
    const nowMs = this.#clock.nowMs();
    this.#refresh(nowMs);
    if (permit.generation !== this.#generation) return;
    if (this.#state === "half-open") {
      if (permit.isProbe) this.#close();
      return;
    }
    if (this.#state !== "closed") return;
    this.#consecutiveFailures = 0;
    this.#count(nowMs, false);
  }

  /** The store failed or timed out. Opens the circuit on a threshold, or on a failed probe. */
  recordFailure(permit: BreakerPermit): void {
    const nowMs = this.#clock.nowMs();
    this.#refresh(nowMs);
    if (permit.generation !== this.#generation) return;
    if (this.#state === "half-open") {
      if (permit.isProbe) this.#open(nowMs);
      return;
    }
    if (this.#state !== "closed") return;
    this.#consecutiveFailures++;
    this.#count(nowMs, true);
    if (this.#consecutiveFailures >= this.#consecutiveFailuresToOpen) {
      this.#open(nowMs);
      return;
    }
    const { calls, failures } = this.#windowTotals(nowMs);
    if (calls >= this.#minimumCallsInWindow && failures >= calls * this.#failureRateToOpen) {
      this.#open(nowMs);
    }
  }

  /** Until an open circuit lets a probe through; 0 when not open. */
  coolDownRemainingMs(): number {
    const nowMs = this.#clock.nowMs();
    this.#refresh(nowMs);
    if (this.#state !== "open") return 0;
    return Math.max(0, this.#openedAtMs + this.#coolDownMs - nowMs);
  }

  snapshot(): BreakerSnapshot {
    const nowMs = this.#clock.nowMs();
    const { calls, failures } = this.#windowTotals(nowMs);
    return {
      state: this.state,
      consecutiveFailures: this.#consecutiveFailures,
      callsInWindow: calls,
      failuresInWindow: failures,
      openCount: this.#openCount,
      coolDownRemainingMs: this.coolDownRemainingMs(),
    };
  }

  #refresh(nowMs: number): void {
    if (this.#state === "open" && nowMs - this.#openedAtMs >= this.#coolDownMs) {
      this.#state = "half-open";
      this.#probeStartedAtMs = null;
    }
  }

  #open(nowMs: number): void {
    this.#state = "open";
    this.#generation++;
    this.#openedAtMs = nowMs;
    this.#openCount++;
    this.#probeStartedAtMs = null;
  }

  #close(): void {
    this.#state = "closed";
    this.#generation++;
    this.#consecutiveFailures = 0;
    this.#probeStartedAtMs = null;
    // The failures that opened the circuit are history; a fresh window judges the recovered store.
    this.#slotIndex.fill(Number.NaN);
  }

  #count(nowMs: number, isFailure: boolean): void {
    const index = Math.floor(nowMs / this.#slotMs);
    const slot = ((index % WINDOW_SLOTS) + WINDOW_SLOTS) % WINDOW_SLOTS;
    if (this.#slotIndex[slot] !== index) {
      this.#slotIndex[slot] = index;
      this.#slotCalls[slot] = 0;
      this.#slotFailures[slot] = 0;
    }
    this.#slotCalls[slot] = (this.#slotCalls[slot] ?? 0) + 1;
    if (isFailure) this.#slotFailures[slot] = (this.#slotFailures[slot] ?? 0) + 1;
  }

  /** Calls and failures in the slots of the last `windowMs` (including the current one). */
  #windowTotals(nowMs: number): { calls: number; failures: number } {
    const index = Math.floor(nowMs / this.#slotMs);
    let calls = 0;
    let failures = 0;
    for (let slot = 0; slot < WINDOW_SLOTS; slot++) {
      const slotIndex = this.#slotIndex[slot] ?? Number.NaN;
      if (slotIndex <= index && slotIndex > index - WINDOW_SLOTS) {
        calls += this.#slotCalls[slot] ?? 0;
        failures += this.#slotFailures[slot] ?? 0;
      }
    }
    return { calls, failures };
  }
}
