import { describe, expect, it, vi } from "vitest";
import { Sleeper } from "./sleeper";

describe("Sleeper", () => {
  it("ends at its deadline", async () => {
    vi.useFakeTimers();
    try {
      const sleeper = new Sleeper();
      let done = false;
      const sleeping = sleeper.sleep(1_000, new AbortController().signal).then(() => {
        done = true;
      });
      await vi.advanceTimersByTimeAsync(999);
      expect(done).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      await sleeping;
      expect(done).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });

  it("ends early when woken or aborted", async () => {
    const sleeper = new Sleeper();
    const woken = sleeper.sleep(60_000, new AbortController().signal);
    sleeper.wake();
    await woken;
    const abort = new AbortController();
    const aborted = sleeper.sleep(60_000, abort.signal);
    abort.abort();
    await aborted;
  });

  it("keeps a wake that comes while nobody sleeps for the next sleep, once", async () => {
    vi.useFakeTimers();
    try {
      const sleeper = new Sleeper();
      sleeper.wake();
      await sleeper.sleep(60_000, new AbortController().signal);
      let done = false;
      const next = sleeper.sleep(1_000, new AbortController().signal).then(() => {
        done = true;
      });
      await vi.advanceTimersByTimeAsync(500);
      expect(done).toBe(false);
      await vi.advanceTimersByTimeAsync(500);
      await next;
    } finally {
      vi.useRealTimers();
    }
  });
});
