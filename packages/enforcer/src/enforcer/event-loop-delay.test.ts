import { describe, expect, it } from "vitest";
import { EventLoopDelayMonitor } from "./event-loop-delay";

/** Blocks this process's event loop for `ms` (a stand-in for a gateway's own CPU work). */
function blockLoop(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // busy
  }
}

/** Yields to the event loop until `condition` holds (the test's timeout bounds it). */
async function untilTrue(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve));
}

describe("EventLoopDelayMonitor", () => {
  it("a blocked loop shows in the interval's max; rotating closes the interval and starts anew", async () => {
    const monitor = new EventLoopDelayMonitor();
    monitor.start();
    try {
      expect(monitor.last).toEqual({ p50Ms: 0, p99Ms: 0, maxMs: 0 });
      // A delay is measured between two samples: let it take its first ones.
      await untilTrue(() => monitor.sampleCount >= 2);
      blockLoop(80);
      // The monitor records the block once its own timer runs again: wait for that, not a time.
      await untilTrue(() => monitor.current().maxMs >= 60);
      const closed = monitor.rotate();
      // At least the part of the 80 ms block beyond one 10 ms sampling interval.
      expect(closed.maxMs).toBeGreaterThanOrEqual(60);
      expect(closed.p99Ms).toBeLessThanOrEqual(closed.maxMs);
      expect(monitor.last).toEqual(closed);
      expect(monitor.current().maxMs).toBeLessThan(closed.maxMs);
    } finally {
      monitor.stop();
    }
  });
});
