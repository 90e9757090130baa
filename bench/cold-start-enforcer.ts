/**
 * One cold start for the cold-start suite (`bench/cold-start.ts` starts one, or ten at once).
 * Reports over IPC, once, `{ type: "decided", atMs, startMs, heapBefore, heapAfter,
 * buffersBefore, buffersAfter, overrides, allowed }`: `atMs` is the wall clock with
 * sub-millisecond resolution (`performance.timeOrigin + performance.now()`, comparable across
 * processes on one machine) when the first decision was answered, `startMs` the same clock when
 * this module began, and the memory figures are after a full GC, before anything was loaded and
 * with the policy held (heap, and ArrayBuffers outside it).
 *
 * BENCH_MODE picks the path:
 *
 * - `binary`: a real enforcer (`createEnforcer`, the Redis store) on the published binary
 *   snapshot; its first `check` for a customer with an override is the first decision;
 * - `entries`: the path before it, measured the way enforcers ran it: the snapshot as a Redis hash
 *   of entry JSON read in HSCAN pages of 1,000, each entry parsed, validated and hashed into a
 *   `PolicyState` checked against the set's checksum, then one resolution of the same request.
 *   No enforcer reads that format any more, so its "decision" is the resolution alone (it needs no
 *   Redis round trip, which flatters it slightly).
 */
import { createHash } from "node:crypto";
import { performance } from "node:perf_hooks";
import { createEnforcer } from "@limitplane/enforcer";
import { PolicyState, parseEntryText, resolveLimits } from "@limitplane/enforcer/policy";
import { Redis } from "ioredis";

const startMs = performance.timeOrigin + performance.now();
const redisUrl = process.env.BENCH_REDIS_URL;
const prefix = process.env.BENCH_PREFIX;
const mode = process.env.BENCH_MODE;
const customerId = process.env.BENCH_CUSTOMER;
if (
  redisUrl === undefined ||
  prefix === undefined ||
  customerId === undefined ||
  (mode !== "binary" && mode !== "entries") ||
  process.send === undefined
) {
  throw new Error(
    "run by bench/cold-start.ts, with BENCH_REDIS_URL, BENCH_PREFIX, BENCH_MODE and BENCH_CUSTOMER",
  );
}
const gc = (globalThis as { gc?: () => void }).gc;
const memory = () => {
  gc?.();
  const usage = process.memoryUsage();
  return { heap: usage.heapUsed, buffers: usage.arrayBuffers };
};
const sha256Hex = (text: string) => createHash("sha256").update(text).digest("hex");

async function viaBinary(): Promise<{
  overrides: number;
  allowed: boolean;
  stop(): Promise<void>;
}> {
  const enforcer = await createEnforcer({
    expectedGateways: 10,
    redis: { url: redisUrl, keyPrefix: prefix },
    controlPlane: { startupWaitMs: 600_000, pollIntervalMs: 60_000 },
    reporting: { heartbeatIntervalMs: 60_000, metricsFlushIntervalMs: 60_000 },
    logger: { log: () => {} },
  });
  const result = await enforcer.check({
    customerId,
    tier: "free",
    method: "GET",
    path: "/v1/things",
  });
  return {
    overrides: enforcer.status().policySize?.customerOverrides ?? 0,
    allowed: result.decision.allowed,
    stop: () => enforcer.stop(),
  };
}

async function viaEntries(): Promise<{
  overrides: number;
  allowed: boolean;
  stop(): Promise<void>;
}> {
  const redis = new Redis(redisUrl as string);
  const [version, checksum] = await redis.hmget(`${prefix}entries:head`, "version", "checksum");
  const builder = PolicyState.builder(Number(version), { sha256Hex });
  let cursor = "0";
  do {
    const [next, flat] = await redis.hscan(`${prefix}entries:snapshot`, cursor, "COUNT", 1_000);
    cursor = next;
    for (let index = 0; index + 1 < flat.length; index += 2) {
      const parsed = parseEntryText(flat[index] as string, flat[index + 1] as string);
      if (!parsed.ok) throw new Error(parsed.errors[0]?.message);
      builder.add(parsed.value);
    }
  } while (cursor !== "0");
  const built = builder.finish(checksum ?? undefined);
  if (!built.ok) throw new Error(built.errors[0]?.message);
  const state = built.value;
  const resolution = resolveLimits(
    state.prepared(),
    { customerId, tier: "free", path: "/v1/things" },
    Date.now(),
  );
  return {
    overrides: state.size.customerOverrides,
    allowed: resolution.checks.length > 0,
    stop: async () => {
      redis.disconnect();
      // Held until here, so the memory figure below counts it.
      void state;
    },
  };
}

const before = memory();
const started = mode === "binary" ? await viaBinary() : await viaEntries();
const atMs = performance.timeOrigin + performance.now();
const after = memory();
process.send({
  type: "decided",
  atMs,
  startMs,
  heapBefore: before.heap,
  heapAfter: after.heap,
  buffersBefore: before.buffers,
  buffersAfter: after.buffers,
  overrides: started.overrides,
  allowed: started.allowed,
});
process.on("disconnect", () => {
  void started.stop().finally(() => process.exit(0));
});
