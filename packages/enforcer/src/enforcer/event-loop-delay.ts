/**
 * How late this process's event loop runs (`monitorEventLoopDelay`), reported per interval: a
 * gateway whose loop is delayed answers every request later, its store calls included, and that
 * delay is this host's, not Redis's. The enforcer closes an interval at each heartbeat and
 * reports it in `/metrics` and in the heartbeat, so "Redis is slow" and "this gateway is busy"
 * can be told apart at a glance.
 */
import { type IntervalHistogram, monitorEventLoopDelay } from "node:perf_hooks";

/** One interval's delays, in milliseconds beyond the sampling interval; 0 when nothing was late. */
export interface EventLoopDelay {
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

const NO_DELAY: EventLoopDelay = { p50Ms: 0, p99Ms: 0, maxMs: 0 };

/** The sampling interval: a timer every 10 ms whose lateness is recorded. */
const RESOLUTION_MS = 10;

export class EventLoopDelayMonitor {
  readonly #histogram: IntervalHistogram;
  #last: EventLoopDelay = NO_DELAY;
  #isRunning = false;

  constructor() {
    this.#histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  }

  /** The last closed interval (all zeros before the first). */
  get last(): EventLoopDelay {
    return this.#last;
  }

  start(): void {
    if (this.#isRunning) return;
    this.#isRunning = true;
    this.#histogram.enable();
  }

  stop(): void {
    if (!this.#isRunning) return;
    this.#isRunning = false;
    this.#histogram.disable();
  }

  /** Samples taken in the interval still open (one per 10 ms while running). */
  get sampleCount(): number {
    return this.#histogram.count;
  }

  /** The figures of the interval still open, without closing it. */
  current(): EventLoopDelay {
    const histogram = this.#histogram;
    // The histogram records each sample's whole interval (10 ms when on time), in nanoseconds.
    const lateMs = (nanoseconds: number) =>
      histogram.count === 0 ? 0 : Math.max(0, nanoseconds / 1e6 - RESOLUTION_MS);
    return {
      p50Ms: round(lateMs(histogram.percentile(50))),
      p99Ms: round(lateMs(histogram.percentile(99))),
      maxMs: round(lateMs(histogram.max)),
    };
  }

  /** Closes the current interval: its figures become {@link last}, and a new one starts. */
  rotate(): EventLoopDelay {
    this.#last = this.current();
    this.#histogram.reset();
    return this.#last;
  }
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
