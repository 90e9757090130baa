/**
 * Preloaded into a target process by the import suite (`node --import`): the main thread's
 * event-loop delay (perf_hooks.monitorEventLoopDelay, 10 ms resolution). On SIGUSR2 it prints
 * `event-loop delay: {"p50Ms":..,"p99Ms":..,"maxMs":..,"gc":{..}}` to stdout, for the time since
 * the last SIGUSR2, and starts again; `gc` counts the main thread's garbage-collection pauses
 * (perf_hooks "gc" entries): how many, their total, the longest, and how many took 10 ms or more. The line is printed from the event loop, so a blocked loop prints it
 * late, never wrong. Worker threads load it too (a worker inherits Node's options, but not tsx's
 * hooks: hence plain JavaScript) and do nothing.
 */
import { monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";
import { isMainThread } from "node:worker_threads";

if (isMainThread) {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  let gc = { count: 0, totalMs: 0, maxMs: 0, atLeast10Ms: 0 };
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      gc.count += 1;
      gc.totalMs += entry.duration;
      gc.maxMs = Math.max(gc.maxMs, entry.duration);
      if (entry.duration >= 10) gc.atLeast10Ms += 1;
    }
  }).observe({ entryTypes: ["gc"] });
  process.on("SIGUSR2", () => {
    const ms = (ns) => Math.round(ns / 1e4) / 100;
    const figures = {
      p50Ms: ms(histogram.percentile(50)),
      p99Ms: ms(histogram.percentile(99)),
      maxMs: ms(histogram.max),
      gc: { ...gc, totalMs: Math.round(gc.totalMs), maxMs: Math.round(gc.maxMs * 10) / 10 },
    };
    histogram.reset();
    gc = { count: 0, totalMs: 0, maxMs: 0, atLeast10Ms: 0 };
    process.stdout.write(`event-loop delay: ${JSON.stringify(figures)}\n`);
  });
}
