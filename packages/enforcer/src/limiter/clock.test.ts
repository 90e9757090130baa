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
