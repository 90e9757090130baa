/**
 * One enforcer process for the scale suite (`bench/scale.ts` starts ten): follows the policy
 * under BENCH_PREFIX on BENCH_REDIS_URL and reports over IPC
 *
 * - `{ type: "ready", version, heapBefore, heapAfter, overrides, loadMs }` once the first policy
 *   is in force (heap used plus ArrayBuffers after a full GC, before the enforcer existed and
 *   with the policy held: a binary snapshot's bytes sit outside the heap);
 * - `{ type: "applied", version, atMs }` for every version applied (`atMs`: wall clock with
 *   sub-millisecond resolution, `performance.timeOrigin + performance.now()`, comparable across
 *   processes on one machine).
 *
 * Decisions are not measured here, so the store is in process.
 */
import { performance } from "node:perf_hooks";
import { createEnforcer } from "@limitplane/enforcer";
import { MemoryStore } from "@limitplane/enforcer/limiter";

const redisUrl = process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379/0";
const prefix = process.env.BENCH_PREFIX;
if (prefix === undefined || process.send === undefined) {
  throw new Error("run by bench/scale.ts, with BENCH_PREFIX and an IPC channel");
}
const send = (message: object) => process.send?.(message);
const gc = (globalThis as { gc?: () => void }).gc;

/** Heap plus ArrayBuffers after a full GC: the policy's binary snapshot is held as bytes. */
const memoryHeld = () => {
  gc?.();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
};
const heapBefore = memoryHeld();
const startedMs = performance.now();
const enforcer = await createEnforcer({
  expectedGateways: 10,
  redis: { url: redisUrl, keyPrefix: prefix },
  store: () => new MemoryStore(),
  controlPlane: { startupWaitMs: 600_000, pollIntervalMs: 2_000 },
  reporting: { heartbeatIntervalMs: 5_000, metricsFlushIntervalMs: 5_000 },
  logger: { log: () => {} },
});
enforcer.onPolicyApplied((applied) => {
  send({
    type: "applied",
    version: applied.version,
    atMs: performance.timeOrigin + performance.now(),
  });
});
const loadMs = performance.now() - startedMs;
const heapAfter = memoryHeld();
send({
  type: "ready",
  version: enforcer.status().policy?.version ?? 0,
  heapBefore,
  heapAfter,
  overrides: enforcer.status().policySize?.customerOverrides ?? 0,
  loadMs,
});

process.on("disconnect", () => {
  void enforcer.stop().finally(() => process.exit(0));
});
