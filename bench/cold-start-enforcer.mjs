/**
 * One cold start for the cold-start suite (`bench/cold-start.ts` starts one, or ten at once).
 * Plain JavaScript on the built package (`packages/enforcer/dist`, which the suite builds first),
 * run by `node` with no TypeScript loader: the start a consumer of the package pays.
 * Reports over IPC, right after the first decision is answered, `{ type: "decided",
 * moduleToDecisionMs }`: the time from this module's body starting (its imports loaded) to the
 * answer, by this process's monotonic clock (the parent times the whole start from the spawn by
 * its own clock: no clock is compared across processes); then `{ type: "memory", heapBefore,
 * heapAfter, buffersBefore, buffersAfter, overrides, allowed }`: the memory after a full GC,
 * before anything was loaded and with the policy held (heap, and ArrayBuffers outside it).
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

const moduleStartMs = performance.now();
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
const gc = /** @type {{ gc?: () => void }} */ (globalThis).gc;
const memory = () => {
  gc?.();
  const usage = process.memoryUsage();
  return { heap: usage.heapUsed, buffers: usage.arrayBuffers };
};
const sha256Hex = (/** @type {string} */ text) => createHash("sha256").update(text).digest("hex");

/** @returns {Promise<{ overrides: number, allowed: boolean, stop(): Promise<void> }>} */
async function viaBinary() {
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

/** @returns {Promise<{ overrides: number, allowed: boolean, stop(): Promise<void> }>} */
async function viaEntries() {
  const redis = new Redis(/** @type {string} */ (redisUrl));
  const [version, checksum] = await redis.hmget(`${prefix}entries:head`, "version", "checksum");
  const builder = PolicyState.builder(Number(version), { sha256Hex });
  let cursor = "0";
  do {
    const [next, flat] = await redis.hscan(`${prefix}entries:snapshot`, cursor, "COUNT", 1_000);
    cursor = next;
    for (let index = 0; index + 1 < flat.length; index += 2) {
      const parsed = parseEntryText(String(flat[index]), String(flat[index + 1]));
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
process.send({ type: "decided", moduleToDecisionMs: performance.now() - moduleStartMs });
const after = memory();
process.send({
  type: "memory",
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
