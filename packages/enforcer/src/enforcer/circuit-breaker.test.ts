import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../limiter/clock";
import { type BreakerPermit, CircuitBreaker, type CircuitBreakerOptions } from "./circuit-breaker";

function breaker(options: CircuitBreakerOptions = {}): {
  breaker: CircuitBreaker;
  clock: ManualClock;
} {
  const clock = new ManualClock(1_000_000);
  return { breaker: new CircuitBreaker({ clock, ...options }), clock };
}

function acquire(subject: CircuitBreaker): BreakerPermit {
  const permit = subject.tryAcquire();
  if (permit === null) throw new Error("expected a permit");
  return permit;
}

function fail(subject: CircuitBreaker, times = 1): void {
  for (let i = 0; i < times; i++) subject.recordFailure(acquire(subject));
}

function succeed(subject: CircuitBreaker, times = 1): void {
  for (let i = 0; i < times; i++) subject.recordSuccess(acquire(subject));
}

describe("CircuitBreaker: opening", () => {
  it.each([1, 3, 5])("opens after %d consecutive failures, not one sooner", (threshold) => {
    const { breaker: subject } = breaker({ consecutiveFailuresToOpen: threshold });
    fail(subject, threshold - 1);
    expect(subject.state).toBe("closed");
    fail(subject);
    expect(subject.state).toBe("open");
  });

  it("a success resets the streak of failures", () => {
    const { breaker: subject } = breaker({
      consecutiveFailuresToOpen: 3,
      minimumCallsInWindow: 100,
    });
    fail(subject, 2);
    succeed(subject);
    fail(subject, 2);
    expect(subject.state).toBe("closed");
  });

  it("opens on a failure rate over the threshold once enough calls were seen", () => {
    const { breaker: subject } = breaker({
      consecutiveFailuresToOpen: 100,
      failureRateToOpen: 0.5,
      minimumCallsInWindow: 20,
    });
    for (let i = 0; i < 9; i++) {
      succeed(subject);
      fail(subject);
    }
    succeed(subject); // 19 calls, 9 failures
    expect(subject.state).toBe("closed");
    fail(subject); // 20 calls, 10 failures: 50%
    expect(subject.state).toBe("open");
  });

  it("does not open on a high rate among too few calls", () => {
    const { breaker: subject } = breaker({
      consecutiveFailuresToOpen: 100,
      minimumCallsInWindow: 20,
    });
    for (let i = 0; i < 5; i++) {
      fail(subject, 2);
      succeed(subject);
    }
    expect(subject.state).toBe("closed");
  });

  it("forgets failures that left the window", () => {
    const { breaker: subject, clock } = breaker({
      consecutiveFailuresToOpen: 100,
      minimumCallsInWindow: 10,
      windowMs: 10_000,
    });
    for (let i = 0; i < 5; i++) {
      fail(subject);
      succeed(subject);
    }
    clock.advance(10_000);
    fail(subject);
    for (let i = 0; i < 9; i++) succeed(subject);
    expect(subject.snapshot()).toMatchObject({ callsInWindow: 10, failuresInWindow: 1 });
    expect(subject.state).toBe("closed");
  });
});

describe("CircuitBreaker: open, half-open and recovery", () => {
  it("an open circuit answers at once without a permit for the whole cool-down", () => {
    const { breaker: subject, clock } = breaker({
      consecutiveFailuresToOpen: 1,
      coolDownMs: 2_000,
    });
    fail(subject);
    for (const elapsedMs of [0, 1, 1_000, 1_999]) {
      clock.set(1_000_000 + elapsedMs);
      expect(subject.tryAcquire()).toBeNull();
      expect(subject.coolDownRemainingMs()).toBe(2_000 - elapsedMs);
    }
  });

  it("the breaker half-opens after the cool-down and closes on success", () => {
    const { breaker: subject, clock } = breaker({
      consecutiveFailuresToOpen: 1,
      coolDownMs: 2_000,
    });
    fail(subject);
    clock.advance(2_000);
    expect(subject.state).toBe("half-open");
    const probe = acquire(subject);
    expect(probe.isProbe).toBe(true);
    subject.recordSuccess(probe);
    expect(subject.state).toBe("closed");
    expect(subject.tryAcquire()).not.toBeNull();
  });

  it("half-open lets one probe through at a time", () => {
    const { breaker: subject, clock } = breaker({
      consecutiveFailuresToOpen: 1,
      coolDownMs: 2_000,
    });
    fail(subject);
    clock.advance(2_000);
    acquire(subject);
    expect(subject.tryAcquire()).toBeNull();
    clock.advance(1_999);
    expect(subject.tryAcquire()).toBeNull();
  });

  it("a failed probe opens the circuit for a new cool-down", () => {
    const { breaker: subject, clock } = breaker({
      consecutiveFailuresToOpen: 1,
      coolDownMs: 2_000,
    });
    fail(subject);
    clock.advance(2_500);
    subject.recordFailure(acquire(subject));
    expect(subject.state).toBe("open");
    expect(subject.coolDownRemainingMs()).toBe(2_000);
    expect(subject.snapshot().openCount).toBe(2);
  });

  it("a probe that is never reported does not stick the breaker: another goes after a cool-down", () => {
    const { breaker: subject, clock } = breaker({
      consecutiveFailuresToOpen: 1,
      coolDownMs: 2_000,
    });
    fail(subject);
    clock.advance(2_000);
    acquire(subject); // lost
    clock.advance(2_000);
    const second = acquire(subject);
    subject.recordSuccess(second);
    expect(subject.state).toBe("closed");
  });

  it("a slow call's outcome from before the circuit opened is ignored", () => {
    const { breaker: subject, clock } = breaker({
      consecutiveFailuresToOpen: 2,
      coolDownMs: 2_000,
    });
    const slow = acquire(subject);
    fail(subject, 2);
    expect(subject.state).toBe("open");
    subject.recordSuccess(slow);
    expect(subject.state).toBe("open");
    clock.advance(2_000);
    const probe = acquire(subject);
    subject.recordFailure(slow);
    expect(subject.state).toBe("half-open");
    subject.recordSuccess(probe);
    expect(subject.state).toBe("closed");
  });

  it("after recovering, the failures that opened it are forgotten", () => {
    const { breaker: subject, clock } = breaker({
      consecutiveFailuresToOpen: 3,
      minimumCallsInWindow: 4,
      coolDownMs: 1_000,
    });
    fail(subject, 3);
    clock.advance(1_000);
    succeed(subject); // the probe
    fail(subject, 2);
    expect(subject.state).toBe("closed");
  });

  it.each<[string, CircuitBreakerOptions]>([
    ["consecutiveFailuresToOpen 0", { consecutiveFailuresToOpen: 0 }],
    ["failureRateToOpen 0", { failureRateToOpen: 0 }],
    ["failureRateToOpen above 1", { failureRateToOpen: 1.5 }],
    ["minimumCallsInWindow 0", { minimumCallsInWindow: 0 }],
    ["windowMs 0", { windowMs: 0 }],
    ["coolDownMs 0", { coolDownMs: 0 }],
    ["coolDownMs NaN", { coolDownMs: Number.NaN }],
  ])("refuses %s", (_name, options) => {
    expect(() => new CircuitBreaker(options)).toThrow(RangeError);
  });
});

describe("CircuitBreaker: properties", () => {
  const step = fc.record({
    advanceMs: fc.integer({ min: 0, max: 3_000 }),
    outcome: fc.constantFrom("success", "failure", "lost"),
  });

  it("cannot stick open: whoever has been refused for a whole cool-down gets a permit", () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 200 }), (steps) => {
        const coolDownMs = 1_000;
        const { breaker: subject, clock } = breaker({
          consecutiveFailuresToOpen: 2,
          minimumCallsInWindow: 3,
          coolDownMs,
        });
        let lastGrantedMs = clock.nowMs();
        for (const { advanceMs, outcome } of steps) {
          clock.advance(advanceMs);
          const permit = subject.tryAcquire();
          if (clock.nowMs() - lastGrantedMs >= coolDownMs) expect(permit).not.toBeNull();
          if (permit === null) continue;
          lastGrantedMs = clock.nowMs();
          if (outcome === "success") subject.recordSuccess(permit);
          if (outcome === "failure") subject.recordFailure(permit);
        }
      }),
    );
  });

  it("never grants a permit while open and cooling down", () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 200 }), (steps) => {
        const { breaker: subject, clock } = breaker({
          consecutiveFailuresToOpen: 1,
          coolDownMs: 500,
        });
        for (const { advanceMs, outcome } of steps) {
          clock.advance(advanceMs);
          const wasOpen = subject.coolDownRemainingMs() > 0;
          const permit = subject.tryAcquire();
          if (wasOpen) expect(permit).toBeNull();
          if (permit === null) continue;
          if (outcome === "success") subject.recordSuccess(permit);
          if (outcome === "failure") subject.recordFailure(permit);
        }
      }),
    );
  });
});
