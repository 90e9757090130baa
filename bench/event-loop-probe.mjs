/**
 * Preloaded into a target process by the import suite (`node --import`): the main thread's
 * event-loop delay (perf_hooks.monitorEventLoopDelay, 10 ms resolution). On SIGUSR2 it prints
 * `event-loop delay: {"p50Ms":..,"p99Ms":..,"maxMs":..}` to stdout, for the time since the last
 * SIGUSR2, and starts again. The line is printed from the event loop, so a blocked loop prints it
 * late, never wrong. Worker threads load it too (a worker inherits Node's options, but not tsx's
 * hooks: hence plain JavaScript) and do nothing.
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import { isMainThread } from "node:worker_threads";

if (isMainThread) {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  process.on("SIGUSR2", () => {
    const ms = (ns) => Math.round(ns / 1e4) / 100;
    const figures = {
      p50Ms: ms(histogram.percentile(50)),
      p99Ms: ms(histogram.percentile(99)),
      maxMs: ms(histogram.max),
    };
    histogram.reset();
    process.stdout.write(`event-loop delay: ${JSON.stringify(figures)}\n`);
  });
}
