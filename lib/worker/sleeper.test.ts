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
    vi.useFakeTimers();
    try {
      const sleeper = new Sleeper();
      let isWoken = false;
      const woken = sleeper.sleep(60_000, new AbortController().signal).then(() => {
        isWoken = true;
      });
      await vi.advanceTimersByTimeAsync(1_000);
      expect(isWoken).toBe(false);
      sleeper.wake();
      // No timer moves: only the wake can end it.
      await vi.advanceTimersByTimeAsync(0);
      expect(isWoken).toBe(true);
      await woken;
      expect(vi.getTimerCount()).toBe(0);

      const abort = new AbortController();
      let isAborted = false;
      const aborted = sleeper.sleep(60_000, abort.signal).then(() => {
        isAborted = true;
      });
      await vi.advanceTimersByTimeAsync(1_000);
      expect(isAborted).toBe(false);
      abort.abort();
      await vi.advanceTimersByTimeAsync(0);
      expect(isAborted).toBe(true);
      await aborted;
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
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
