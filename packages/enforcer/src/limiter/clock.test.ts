import { afterEach, describe, expect, it, vi } from "vitest";
import { ManualClock, monotonicClock } from "./clock";

describe("monotonic clock", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("never goes backwards between readings", () => {
    let previous = monotonicClock.nowMs();
    for (let i = 0; i < 10_000; i++) {
      const reading = monotonicClock.nowMs();
      expect(reading).toBeGreaterThanOrEqual(previous);
      previous = reading;
    }
  });

  it("reads like performance.timeOrigin + performance.now() and moves with it", () => {
    // Both are the process's monotonic clock; only the offset between them was set at load.
    const before = performance.timeOrigin + performance.now();
    const reading = monotonicClock.nowMs();
    const after = performance.timeOrigin + performance.now();
    // The offset was set from one reading between two: within a millisecond unless the process
    // was descheduled just then, and either way far from any other clock's readings.
    expect(reading).toBeGreaterThan(before - 1_000);
    expect(reading).toBeLessThan(after + 1_000);
    // Readings between brackets of `performance.now()`: the same clock moved at least as far as
    // the inner bracket and at most as far as the outer one, however the process was scheduled.
    // (The thousandth of a millisecond absorbs the two conversions' rounding.)
    const outerStart = performance.now();
    const start = monotonicClock.nowMs();
    const innerStart = performance.now();
    while (performance.now() - innerStart < 30) {
      // wait until `performance.now()` has moved 30 ms
    }
    const innerElapsed = performance.now() - innerStart;
    const elapsed = monotonicClock.nowMs() - start;
    const outerElapsed = performance.now() - outerStart;
    expect(elapsed).toBeGreaterThanOrEqual(innerElapsed - 0.001);
    expect(elapsed).toBeLessThanOrEqual(outerElapsed + 0.001);
  });

  it("ignores the wall clock being set a day back or a day forward", () => {
    const before = monotonicClock.nowMs();
    const wallBeforeMs = Date.now();
    vi.setSystemTime(wallBeforeMs - 86_400_000);
    expect(Date.now()).toBeLessThan(wallBeforeMs - 86_000_000);
    const afterBack = monotonicClock.nowMs();
    vi.setSystemTime(Date.now() + 2 * 86_400_000);
    const afterForward = monotonicClock.nowMs();
    expect(afterBack).toBeGreaterThanOrEqual(before);
    expect(afterForward).toBeGreaterThanOrEqual(afterBack);
    // A day is 8.64e7 ms; the readings moved by far less than an hour either way.
    expect(afterForward - before).toBeLessThan(3_600_000);
  });
});

describe("manual clock", () => {
  it("moves only when told to, forwards or backwards", () => {
    const clock = new ManualClock(1000);
    expect(clock.nowMs()).toBe(1000);
    expect(clock.advance(250)).toBe(1250);
    expect(clock.advance(-500)).toBe(750);
    clock.set(42);
    expect(clock.nowMs()).toBe(42);
  });

  it("starts at 0 by default", () => {
    expect(new ManualClock().nowMs()).toBe(0);
  });
});
