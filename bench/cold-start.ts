/**
 * `npm run bench -- cold-start`: how long a new enforcer takes to answer its first decision when
 * the policy holds a million customer overrides, and what the policy costs it in memory.
 *
 * The policy is the example policy plus 1,000,000 overrides (800,000 customers, the first
 * 200,000 with a second override on one endpoint class; 16 distinct limits), published on the
 * bench's own Redis as the control plane publishes it: one binary snapshot
 * (`publishPolicySnapshot`). Each run starts enforcer processes (`bench/cold-start-enforcer.mjs`,
 * plain JavaScript run by `node` on the built package, as a consumer runs it: the real
 * `createEnforcer` with the Redis store) and times from the spawn to the answer of the first
 * `check`, which includes Node's start and the package's imports. The suite builds the package
 * first (`npm run build -w packages/enforcer`). Runs alternate one enforcer alone with ten started
 * at once, at least five of each.
 *
 * For comparison, in the same run: the path before the binary snapshot (the set as a Redis hash
 * of entry JSON, read in HSCAN pages, each entry parsed, validated and hashed), started alone
 * once (at about 45 s a start it is not repeated). Set BENCH_COLD_START_OLD=0 to skip it.
 *
 * Targets (the issue's): alone, the first decision within 3 s of start; ten at once, all within
 * 25 s; at most 64 bytes of memory per override (heap plus ArrayBuffers, after a full GC, over
 * the process before the enforcer existed).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import path from "node:path";
import { performance } from "node:perf_hooks";
import {
  BinarySnapshotWriter,
  EntrySetSum,
  entriesOfSnapshotPolicy,
  entryDigestHex,
  entryText,
  overrideEntryKey,
  type PolicyEntry,
} from "@limitplane/enforcer/policy";
import { publishPolicySnapshot } from "@limitplane/enforcer/publication";
import { exampleSnapshot } from "@limitplane/enforcer/testing";
import { Redis } from "ioredis";
import { benchRedis, loadLine, MIN_RUNS, median, summary } from "./fair";
import { Targets } from "./results";

const ROOT = path.resolve(import.meta.dirname, "..");
const OVERRIDES = 1_000_000;
const CUSTOMERS = 800_000;
const TEN = 10;
const sha256Hex = (text: string) => createHash("sha256").update(text).digest("hex");

/** The example policy's entries plus the million overrides, each made once, as a generator. */
function* policyEntries(): Generator<PolicyEntry> {
  const snapshot = exampleSnapshot(() => {}, { version: 1 });
  yield* entriesOfSnapshotPolicy(snapshot.policy);
  const limits = Array.from({ length: 16 }, (_, index) => ({
    algorithm: "token-bucket" as const,
    capacity: 100 + 50 * index,
    refillPerSec: 10 + index,
    mode: "enforce" as const,
    onStoreFailure: "open" as const,
  }));
  for (let index = 0; index < CUSTOMERS; index++) {
    const customerId = `cust-${String(index).padStart(7, "0")}`;
    const classes: (string | null)[] = index < OVERRIDES - CUSTOMERS ? [null, "reports"] : [null];
    for (const endpointClass of classes) {
      const limit = limits[(index + (endpointClass === null ? 0 : 7)) % limits.length];
      if (limit === undefined) throw new Error("no limit");
      yield {
        kind: "customer-override",
        key: overrideEntryKey(customerId, endpointClass),
        value: { customerId, endpointClass, limit },
      };
    }
  }
}

interface Published {
  readonly prefix: string;
  readonly entries: number;
  readonly binaryBytes: number;
  readonly entryBytes: number;
}

/** Publishes the policy both ways under a fresh prefix: the binary snapshot, and the old hash. */
async function publish(redis: Redis, isOldToo: boolean): Promise<Published> {
  const prefix = `bench:cold:${randomBytes(3).toString("hex")}:`;
  const writer = new BinarySnapshotWriter();
  const sum = new EntrySetSum();
  let entries = 0;
  let entryBytes = 0;
  let batch: string[] = [];
  const flush = async () => {
    if (batch.length > 0) await redis.hset(`${prefix}entries:snapshot`, ...batch);
    batch = [];
  };
  for (const entry of policyEntries()) {
    const text = entryText(entry);
    sum.add(entryDigestHex(entry.key, text, sha256Hex));
    writer.add(entry);
    entries++;
    if (isOldToo) {
      batch.push(entry.key, text);
      entryBytes += entry.key.length + text.length;
      if (batch.length >= 2_000) await flush();
    }
  }
  await flush();
  const bytes = writer.finish(1, sum.hex, (input) => createHash("sha256").update(input).digest());
  const published = await publishPolicySnapshot(redis, prefix, {
    version: 1,
    checksum: sum.hex,
    entries,
    mode: "publish",
    bytes,
  });
  if (published.status !== "applied") throw new Error(`not published: ${published.status}`);
  if (isOldToo) {
    await redis.hset(`${prefix}entries:head`, "version", "1", "checksum", sum.hex);
  }
  return { prefix, entries, binaryBytes: bytes.length, entryBytes };
}

interface ColdStart {
  /** Spawn to the first decision's answer, ms. */
  readonly firstDecisionMs: number;
  /** Spawn to the start of the enforcer's module (Node starting, the imports loaded), ms. */
  readonly bootMs: number;
  /** Memory the policy and the enforcer added, bytes: heap, and heap plus ArrayBuffers. */
  readonly heapBytes: number;
  readonly totalBytes: number;
  readonly overrides: number;
  readonly child: ChildProcess;
}

function coldStart(
  mode: "binary" | "entries",
  prefix: string,
  redisUrl: string,
): Promise<ColdStart> {
  const spawnedMs = performance.now();
  const child = spawn(process.execPath, ["--expose-gc", "bench/cold-start-enforcer.mjs"], {
    cwd: ROOT,
    env: {
      ...process.env,
      BENCH_PREFIX: prefix,
      BENCH_REDIS_URL: redisUrl,
      BENCH_MODE: mode,
      BENCH_CUSTOMER: "cust-0123456",
    },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  return new Promise((resolve, reject) => {
    child.on("exit", (code) => reject(new Error(`a ${mode} enforcer exited with ${code}`)));
    let firstDecisionMs = Number.NaN;
    let moduleToDecisionMs = Number.NaN;
    child.on("message", (message: Record<string, number | string>) => {
      if (message.type === "decided") {
        // Sent right after the answer: its receipt ends the start, by this process's clock.
        firstDecisionMs = performance.now() - spawnedMs;
        moduleToDecisionMs = Number(message.moduleToDecisionMs);
        return;
      }
      const heapBytes = Number(message.heapAfter) - Number(message.heapBefore);
      resolve({
        firstDecisionMs,
        bootMs: firstDecisionMs - moduleToDecisionMs,
        heapBytes,
        totalBytes: heapBytes + Number(message.buffersAfter) - Number(message.buffersBefore),
        overrides: Number(message.overrides),
        child,
      });
    });
  });
}

async function stopAll(starts: readonly ColdStart[]): Promise<void> {
  await Promise.all(
    starts.map(
      ({ child }) =>
        new Promise<void>((resolve) => {
          child.removeAllListeners("exit");
          child.once("exit", () => resolve());
          child.disconnect();
        }),
    ),
  );
}

const seconds = (ms: number) => ms / 1_000;

/** Builds the package the enforcer processes import, so they run what a consumer would install. */
function buildPackage(): void {
  const startedMs = performance.now();
  execFileSync("npm", ["run", "build", "-w", "packages/enforcer"], { cwd: ROOT, stdio: "ignore" });
  console.log(
    `built packages/enforcer/dist in ${seconds(performance.now() - startedMs).toFixed(1)} s`,
  );
}

export async function run(): Promise<void> {
  console.log(loadLine("at start"));
  buildPackage();
  const server = await benchRedis();
  const redis = new Redis(server.url);
  const isOldToo = process.env.BENCH_COLD_START_OLD !== "0";
  try {
    const buildStartMs = performance.now();
    const published = await publish(redis, isOldToo);
    console.log(
      `policy: ${published.entries.toLocaleString("en")} entries (${OVERRIDES.toLocaleString("en")} overrides); binary snapshot ${(published.binaryBytes / 1e6).toFixed(1)} MB (${(published.binaryBytes / OVERRIDES).toFixed(1)} B per override)${isOldToo ? `, entry JSON ${(published.entryBytes / 1e6).toFixed(1)} MB` : ""}; encoded and published in ${seconds(performance.now() - buildStartMs).toFixed(1)} s`,
    );

    const alone: ColdStart[] = [];
    const tenMax: number[] = [];
    const tenAll: number[] = [];
    let old: ColdStart | null = null;
    for (let round = 0; round < MIN_RUNS; round++) {
      const one = await coldStart("binary", published.prefix, server.url);
      alone.push(one);
      await stopAll([one]);
      const ten = await Promise.all(
        Array.from({ length: TEN }, () => coldStart("binary", published.prefix, server.url)),
      );
      const times = ten.map((start) => start.firstDecisionMs);
      tenMax.push(Math.max(...times));
      tenAll.push(...times);
      await stopAll(ten);
      console.log(
        `run ${round + 1}: alone ${seconds(one.firstDecisionMs).toFixed(2)} s (Node and imports ${seconds(one.bootMs).toFixed(2)} s), ${(one.totalBytes / OVERRIDES).toFixed(1)} B per override; ten at once: slowest ${seconds(Math.max(...times)).toFixed(2)} s, fastest ${seconds(Math.min(...times)).toFixed(2)} s; ${loadLine("now")}`,
      );
      if (round === 0 && isOldToo) {
        old = await coldStart("entries", published.prefix, server.url);
        await stopAll([old]);
        console.log(
          `the path before (entry JSON, alone): ${seconds(old.firstDecisionMs).toFixed(2)} s to the first resolution, ${(old.totalBytes / OVERRIDES).toFixed(1)} B per override; ${loadLine("now")}`,
        );
      }
    }
    // The example policy's own overrides come on top of the million.
    const expected =
      OVERRIDES + (exampleSnapshot(() => {}, { version: 1 }).policy.customerOverrides?.length ?? 0);
    for (const start of [...alone, ...(old === null ? [] : [old])]) {
      if (start.overrides !== expected) {
        throw new Error(`an enforcer held ${start.overrides} overrides, not ${expected}`);
      }
    }

    const aloneSeconds = alone.map((start) => seconds(start.firstDecisionMs));
    const bytesPerOverride = alone.map((start) => start.totalBytes / OVERRIDES);
    const heapPerOverride = alone.map((start) => start.heapBytes / OVERRIDES);
    console.log(
      `\nalone: ${summary(aloneSeconds)} s to the first decision, of which Node's start and the imports ${summary(alone.map((start) => seconds(start.bootMs)))} s; ten at once: every enforcer ${summary(tenAll.map(seconds))} s`,
    );
    console.log(
      `memory per override: ${summary(bytesPerOverride, 1)} B (heap alone ${summary(heapPerOverride, 1)} B; the rest is the snapshot's bytes)`,
    );
    if (old !== null) {
      console.log(
        `against the path before, same run: ${(old.firstDecisionMs / median(alone.map((start) => start.firstDecisionMs))).toFixed(1)}x faster to the first decision, ${(old.totalBytes / OVERRIDES / median(bytesPerOverride)).toFixed(1)}x less memory per override (before: ${seconds(old.firstDecisionMs).toFixed(2)} s, ${(old.totalBytes / OVERRIDES).toFixed(1)} B)`,
      );
    }
    const targets = new Targets();
    targets.atMost("one enforcer, 1M overrides: spawn to first decision", aloneSeconds, 3, " s");
    targets.atMost(
      "ten started at once: the slowest one's first decision",
      tenMax.map(seconds),
      25,
      " s",
    );
    targets.atMost("memory per override (heap + ArrayBuffers)", bytesPerOverride, 64, " B");
    targets.print("cold-start targets");
    console.log(loadLine("at end"));
  } finally {
    redis.disconnect();
    await server.stop();
  }
}
