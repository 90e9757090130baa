import { describe, expect, it } from "vitest";
import { ManualTimers } from "./timers";

describe("ManualTimers", () => {
  it("runs timers in due order as time advances, with the clock at each due time", () => {
    const timers = new ManualTimers(1000);
    const seen: string[] = [];
    timers.setTimer(() => seen.push(`b@${timers.nowMs()}`), 20);
    timers.setTimer(() => seen.push(`a@${timers.nowMs()}`), 10);
    timers.setTimer(() => seen.push(`c@${timers.nowMs()}`), 20);
    timers.advance(15);
    expect(seen).toEqual(["a@1010"]);
    timers.advance(5);
    expect(seen).toEqual(["a@1010", "b@1020", "c@1020"]);
    expect(timers.nowMs()).toBe(1020);
    expect(timers.pendingCount).toBe(0);
  });

  it("never runs a cancelled timer", () => {
    const timers = new ManualTimers();
    let runs = 0;
    const handle = timers.setTimer(() => runs++, 5);
    handle.cancel();
    timers.advance(10);
    expect(runs).toBe(0);
  });
});
