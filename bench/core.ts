/**
 * Core suite: the in-process limiter against rate-limiter-flexible's RateLimiterMemory, side by
 * side in one process, plus the eviction cost under a unique-key flood and bytes per key.
 *
 * Both sides run the same number of decisions per trial, 7 alternating trials after a warm-up.
 * Rows marked "sync vs promise" time our synchronous call against their promise (how each is
 * meant to be called); the "awaited on both sides" row beside each awaits ours too. A rejection
 * of theirs (a rejected promise) is caught by the harness, which catches for both sides alike.
 * Random key order: ns per layered decision at 10k and at 1M keys, alternating. After each group
 * of rows both sides are asked once more and must still admit (allow rows) or reject (reject
 * rows), so that no row times a path other than the one it names.
 *
 * Both sides compute every decision in full. Ours returns one frozen decision object for a
 * rejection that repeats the previous one exactly (same list, same numbers: the hot-key reject
 * rows, within each millisecond), which saves an allocation, never the computation; in the 100k
 * rows each key's wait differs, so nearly every rejection there is a new object.
 *
 * Figures are medians of the trials; the machine is small and noisy, so read them as orders of
 * magnitude and ratios, not as exact numbers. The targets at the end are the issue's.
 */
import type { DecideInput, LimitCheck } from "@limitplane/enforcer/limiter";
import { MemoryStore, monotonicClock } from "@limitplane/enforcer/limiter";
import { RateLimiterMemory } from "rate-limiter-flexible";
import { loadLine, pairedRatios, summary } from "./fair";
import { Targets, type Verdict, verdictOf } from "./results";

const TRIALS = 7;
/** Decisions per trial, the same for both sides. */
const OPS = 200_000;
/** Random-order decisions per trial in the key-count scaling rows. */
const RANDOM_OPS = 1_000_000;
const RANDOM_KEY_COUNTS = [10_000, 1_000_000] as const;
/** The 10k-key random-order figure on main when the issue was filed (ns per decision). */
const RANDOM_10K_BASELINE_NS = 459;
const KEY_COUNT = 100_000;
const FLOOD_OPS = 1_000_000;
const NAIVE_FLOOD_OPS = 20_000;

/** Always admits within the bench: a token bucket that can never run dry. */
const ROOMY: LimitCheck = {
  scope: "api",
  limit: { algorithm: "token-bucket", capacity: 1e12, refillPerSec: 1e9 },
  mode: "enforce",
};

/** Admits once, then rejects for the rest of the bench. */
const EXHAUSTED: LimitCheck = {
  scope: "api",
  limit: { algorithm: "token-bucket", capacity: 1, refillPerSec: 1e-6 },
  mode: "enforce",
};

/** rate-limiter-flexible's windows, long enough that nothing expires during the bench. */
const THEIR_DURATION_SEC = 3600;

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

function nsPerOpSync(ops: number, body: (i: number) => void): number {
  const startNs = process.hrtime.bigint();
  for (let i = 0; i < ops; i++) body(i);
  return Number(process.hrtime.bigint() - startNs) / ops;
}

/**
 * Awaits each decision in turn. A rejected promise (rate-limiter-flexible's way of saying
 * "rejected") is caught here, for both sides alike, so neither side's path has a handler the
 * other lacks.
 */
async function nsPerOpAsync(ops: number, body: (i: number) => Promise<unknown>): Promise<number> {
  const startNs = process.hrtime.bigint();
  for (let i = 0; i < ops; i++) {
    try {
      await body(i);
    } catch {
      // a rejection is a decision too
    }
  }
  return Number(process.hrtime.bigint() - startNs) / ops;
}

/** One side of a comparison: runs `ops` decisions and returns nanoseconds per decision. */
type Side = (ops: number) => Promise<number>;

/**
 * Fails the run unless both sides still decide as the row says: `isAllowed` for ours, and for
 * theirs a resolved promise (admitted) or a rejected one (rejected).
 */
async function expectBoth(
  what: string,
  isAllowed: boolean,
  ours: () => { readonly allowed: boolean },
  theirs: () => Promise<unknown>,
): Promise<void> {
  const oursAllowed = ours().allowed;
  const theirsAllowed = await theirs().then(
    () => true,
    () => false,
  );
  if (oursAllowed !== isAllowed || theirsAllowed !== isAllowed) {
    throw new Error(
      `${what}: expected both sides to ${isAllowed ? "admit" : "reject"}, ours admitted: ${oursAllowed}, theirs admitted: ${theirsAllowed}`,
    );
  }
}

const syncSide =
  (body: (i: number) => void): Side =>
  async (ops) =>
    nsPerOpSync(ops, body);

const asyncSide =
  (body: (i: number) => Promise<unknown>): Side =>
  (ops) =>
    nsPerOpAsync(ops, body);

interface Comparison {
  readonly oursNs: number;
  readonly theirsNs: number;
  /** Median over rounds of theirs / ours within the round: each pair ran back to back. */
  readonly ratio: number;
  /** Theirs / ours between each side's fastest round: the figure least inflated by other load. */
  readonly bestRatio: number;
  /** Theirs / ours per round. */
  readonly ratios: readonly number[];
}

/**
 * Nanoseconds per decision for both sides: one warm-up each, then TRIALS rounds that alternate
 * ours and theirs, so that both see the same background load; medians of the rounds, and the
 * ratio as the median of the per-round ratios, which background load on a shared machine
 * disturbs least. Theirs are awaited one after another, as a caller of its promise API would.
 */
async function compare(ours: Side, theirs: Side): Promise<Comparison> {
  await ours(OPS);
  await theirs(OPS);
  const oursTrials: number[] = [];
  const theirsTrials: number[] = [];
  const ratios: number[] = [];
  for (let trial = 0; trial < TRIALS; trial++) {
    const oursNs = await ours(OPS);
    const theirsNs = await theirs(OPS);
    oursTrials.push(oursNs);
    theirsTrials.push(theirsNs);
    ratios.push(theirsNs / oursNs);
  }
  return {
    oursNs: median(oursTrials),
    theirsNs: median(theirsTrials),
    ratio: median(ratios),
    bestRatio: Math.min(...theirsTrials) / Math.min(...oursTrials),
    ratios,
  };
}

const collectGarbage: () => void = (() => {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error("run with node --expose-gc (npm run bench does)");
  return gc;
})();

/** Live bytes on and off the JS heap (typed arrays live off it), after full collections. */
function liveBytes(): number {
  collectGarbage();
  collectGarbage();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
}

/** Bytes per key held by whatever `fill` builds, measured while it is still reachable. */
async function bytesPerKey(keyCount: number, fill: () => Promise<unknown>): Promise<number> {
  const beforeBytes = liveBytes();
  const held = await fill();
  const afterBytes = liveBytes();
  // Keep `held` reachable until after the measurement.
  if (held === undefined) throw new Error("fill must return what it built");
  return (afterBytes - beforeBytes) / keyCount;
}

/**
 * The LRU the issue warns about: a Map that moves a key to the end on use and evicts with
 * `map.keys().next()`. Deletions leave holes at the front of V8's ordered hash table, which every
 * `keys().next()` walks until the table is rebuilt.
 */
class NaiveMapLru {
  readonly #buckets = new Map<string, { tokens: number; lastMs: number }>();
  constructor(readonly maxKeys: number) {}

  take(key: string, nowMs: number): boolean {
    const bucket = this.#buckets.get(key) ?? { tokens: 10, lastMs: nowMs };
    this.#buckets.delete(key);
    bucket.tokens = Math.min(10, bucket.tokens + (nowMs - bucket.lastMs) / 1000);
    bucket.lastMs = nowMs;
    const isAllowed = bucket.tokens >= 1;
    if (isAllowed) bucket.tokens -= 1;
    this.#buckets.set(key, bucket);
    if (this.#buckets.size > this.maxKeys) {
      const oldest = this.#buckets.keys().next();
      if (oldest.done !== true) this.#buckets.delete(oldest.value);
    }
    return isAllowed;
  }
}

interface Row {
  readonly what: string;
  readonly unit: string;
  readonly ours: number;
  readonly theirs: number | null;
  /** ours / theirs, oriented so that bigger is better for us. */
  readonly ratio: number | null;
  readonly bestRatio: number | null;
  readonly aim: string;
  readonly verdict: Verdict | "";
  /** Per-round ratios behind an aimed throughput row. */
  readonly ratios?: readonly number[];
  readonly minRatio?: number;
}

/** a[i] - b[i] for two series measured in the same rounds. */
function differences(a: readonly number[], b: readonly number[]): number[] {
  return a.map((value, index) => value - (b[index] ?? Number.NaN));
}

function perSecond(nsPerOp: number): number {
  return 1e9 / nsPerOp;
}

function formatNumber(value: number): string {
  if (value >= 100) return Math.round(value).toLocaleString("en-US");
  return value.toFixed(value >= 10 ? 1 : 2);
}

function printTable(rows: readonly Row[]): void {
  const header = [
    "measure",
    "unit",
    "ours",
    "rate-limiter-flexible",
    "ratio",
    "best-round ratio",
    "aim",
    "",
  ];
  const body = rows.map((row) => [
    row.what,
    row.unit,
    formatNumber(row.ours),
    row.theirs === null ? "-" : formatNumber(row.theirs),
    row.ratio === null ? "-" : `${row.ratio.toFixed(1)}x`,
    row.bestRatio === null ? "-" : `${row.bestRatio.toFixed(1)}x`,
    row.aim,
    row.verdict,
  ]);
  const widths = header.map((title, column) =>
    Math.max(title.length, ...body.map((cells) => (cells[column] ?? "").length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join("  ")
      .trimEnd();
  console.log(line(header));
  console.log(line(widths.map((width) => "-".repeat(width))));
  for (const cells of body) console.log(line(cells));
}

function throughputRow(what: string, comparison: Comparison, minRatio: number | null): Row {
  return {
    what,
    unit: "decisions/s",
    ours: perSecond(comparison.oursNs),
    theirs: perSecond(comparison.theirsNs),
    ratio: comparison.ratio,
    bestRatio: comparison.bestRatio,
    aim: minRatio === null ? "(info)" : `>= ${minRatio}x`,
    verdict: minRatio === null ? "" : verdictOf(comparison.ratio >= minRatio),
    ratios: comparison.ratios,
    ...(minRatio === null ? {} : { minRatio }),
  };
}

export async function run(): Promise<void> {
  const loadAtStart = loadLine("at start");
  const subjects = Array.from({ length: KEY_COUNT }, (_, i) => `user-${i}`);
  const subjectAt = (i: number) => subjects[i] ?? "missing";
  const inputsOf = (check: LimitCheck): DecideInput[] =>
    subjects.map((subject) => ({ subject, checks: [check] }));
  const roomyInputs = inputsOf(ROOMY);
  const exhaustedInputs = inputsOf(EXHAUSTED);
  const roomyAt = (i: number): DecideInput =>
    roomyInputs[i] ?? { subject: "missing", checks: [ROOMY] };
  const exhaustedAt = (i: number): DecideInput =>
    exhaustedInputs[i] ?? { subject: "missing", checks: [EXHAUSTED] };
  const hotRoomy: DecideInput = { subject: "hot", checks: [ROOMY] };
  const hotExhausted: DecideInput = { subject: "hot", checks: [EXHAUSTED] };
  // Hot key, allow path: our synchronous call against their promise (how each is meant to be
  // called), then both awaited.
  const ours = new MemoryStore({ maxKeys: KEY_COUNT });
  const theirsRoomy = new RateLimiterMemory({ points: 1e12, duration: THEIR_DURATION_SEC });
  const allowHot = await compare(
    syncSide(() => ours.decideSync(hotRoomy)),
    asyncSide(() => theirsRoomy.consume("hot")),
  );
  const allowHotAwaited = await compare(
    asyncSide(() => ours.decide(hotRoomy)),
    asyncSide(() => theirsRoomy.consume("hot")),
  );
  // The same, through the single-limit fast path (the operation rate-limiter-flexible offers).
  const oursSingle = new MemoryStore({ maxKeys: KEY_COUNT });
  const allowHotSingle = await compare(
    syncSide(() => oursSingle.consumeSync("hot", "api", ROOMY.limit)),
    asyncSide(() => theirsRoomy.consume("hot")),
  );

  await expectBoth(
    "allow, hot key",
    true,
    () => ours.decideSync(hotRoomy),
    () => theirsRoomy.consume("hot"),
  );
  await expectBoth(
    "allow, hot key (consumeSync)",
    true,
    () => oursSingle.consumeSync("hot", "api", ROOMY.limit),
    () => theirsRoomy.consume("hot"),
  );

  // Hot key, reject path. Their rejection is a rejected promise, caught by the harness for both.
  const oursRejecting = new MemoryStore({ maxKeys: KEY_COUNT });
  oursRejecting.decideSync(hotExhausted);
  const theirsExhausted = new RateLimiterMemory({ points: 1, duration: THEIR_DURATION_SEC });
  await theirsExhausted.consume("hot");
  const rejectHot = await compare(
    syncSide(() => oursRejecting.decideSync(hotExhausted)),
    asyncSide(() => theirsExhausted.consume("hot")),
  );
  const rejectHotAwaited = await compare(
    asyncSide(() => oursRejecting.decide(hotExhausted)),
    asyncSide(() => theirsExhausted.consume("hot")),
  );
  const oursSingleRejecting = new MemoryStore({ maxKeys: KEY_COUNT });
  oursSingleRejecting.consumeSync("hot", "api", EXHAUSTED.limit);
  const rejectHotSingle = await compare(
    syncSide(() => oursSingleRejecting.consumeSync("hot", "api", EXHAUSTED.limit)),
    asyncSide(() => theirsExhausted.consume("hot")),
  );

  await expectBoth(
    "reject, hot key",
    false,
    () => oursRejecting.decideSync(hotExhausted),
    () => theirsExhausted.consume("hot"),
  );
  await expectBoth(
    "reject, hot key (consumeSync)",
    false,
    () => oursSingleRejecting.consumeSync("hot", "api", EXHAUSTED.limit),
    () => theirsExhausted.consume("hot"),
  );

  // 100k keys, round robin: allow, then reject once every key is exhausted.
  const oursMany = new MemoryStore({ maxKeys: KEY_COUNT });
  const theirsMany = new RateLimiterMemory({ points: 1e12, duration: THEIR_DURATION_SEC });
  const allowMany = await compare(
    syncSide((i) => oursMany.decideSync(roomyAt(i % KEY_COUNT))),
    asyncSide((i) => theirsMany.consume(subjectAt(i % KEY_COUNT))),
  );
  const allowManyAwaited = await compare(
    asyncSide((i) => oursMany.decide(roomyAt(i % KEY_COUNT))),
    asyncSide((i) => theirsMany.consume(subjectAt(i % KEY_COUNT))),
  );
  const oursManyRejecting = new MemoryStore({ maxKeys: KEY_COUNT });
  const theirsManyExhausted = new RateLimiterMemory({ points: 1, duration: THEIR_DURATION_SEC });
  for (let i = 0; i < KEY_COUNT; i++) {
    oursManyRejecting.decideSync(exhaustedAt(i));
    await theirsManyExhausted.consume(subjectAt(i));
  }
  const rejectMany = await compare(
    syncSide((i) => oursManyRejecting.decideSync(exhaustedAt(i % KEY_COUNT))),
    asyncSide((i) => theirsManyExhausted.consume(subjectAt(i % KEY_COUNT))),
  );
  const rejectManyAwaited = await compare(
    asyncSide((i) => oursManyRejecting.decide(exhaustedAt(i % KEY_COUNT))),
    asyncSide((i) => theirsManyExhausted.consume(subjectAt(i % KEY_COUNT))),
  );
  const oursManySingle = new MemoryStore({ maxKeys: KEY_COUNT });
  const allowManySingle = await compare(
    syncSide((i) => oursManySingle.consumeSync(subjectAt(i % KEY_COUNT), "api", ROOMY.limit)),
    asyncSide((i) => theirsMany.consume(subjectAt(i % KEY_COUNT))),
  );
  const oursManySingleRejecting = new MemoryStore({ maxKeys: KEY_COUNT });
  for (let i = 0; i < KEY_COUNT; i++) {
    oursManySingleRejecting.consumeSync(subjectAt(i), "api", EXHAUSTED.limit);
  }
  const rejectManySingle = await compare(
    syncSide((i) =>
      oursManySingleRejecting.consumeSync(subjectAt(i % KEY_COUNT), "api", EXHAUSTED.limit),
    ),
    asyncSide((i) => theirsManyExhausted.consume(subjectAt(i % KEY_COUNT))),
  );

  for (const i of [0, KEY_COUNT - 1]) {
    await expectBoth(
      `allow, 100k keys, key ${i}`,
      true,
      () => oursMany.decideSync(roomyAt(i)),
      () => theirsMany.consume(subjectAt(i)),
    );
    await expectBoth(
      `allow, 100k keys (consumeSync), key ${i}`,
      true,
      () => oursManySingle.consumeSync(subjectAt(i), "api", ROOMY.limit),
      () => theirsMany.consume(subjectAt(i)),
    );
    await expectBoth(
      `reject, 100k keys, key ${i}`,
      false,
      () => oursManyRejecting.decideSync(exhaustedAt(i)),
      () => theirsManyExhausted.consume(subjectAt(i)),
    );
    await expectBoth(
      `reject, 100k keys (consumeSync), key ${i}`,
      false,
      () => oursManySingleRejecting.consumeSync(subjectAt(i), "api", EXHAUSTED.limit),
      () => theirsManyExhausted.consume(subjectAt(i)),
    );
  }

  // Random key order at 10k and 1M keys (a store big enough for all): ns per layered decision,
  // TRIALS rounds alternating the two sizes. The order is drawn beforehand.
  const randomNs = new Map<number, number[]>(RANDOM_KEY_COUNTS.map((count) => [count, []]));
  // The floor under it: one `Map.get` of the same subject strings in the same order (what any
  // store keyed by subject pays before it does anything), measured in the same rounds.
  const floorNs = new Map<number, number[]>(RANDOM_KEY_COUNTS.map((count) => [count, []]));
  {
    const stores = RANDOM_KEY_COUNTS.map((count) => {
      const inputs = Array.from(
        { length: count },
        (_, i): DecideInput => ({ subject: `r-${i}`, checks: [ROOMY] }),
      );
      const store = new MemoryStore({ maxKeys: count });
      for (const input of inputs) store.decideSync(input);
      const order = Uint32Array.from({ length: RANDOM_OPS }, () =>
        Math.floor(Math.random() * count),
      );
      const bySubject = new Map(inputs.map((input, i) => [input.subject, i]));
      return { count, inputs, store, order, bySubject };
    });
    let sink = 0;
    for (let trial = -1; trial < TRIALS; trial++) {
      for (const { count, inputs, store, order, bySubject } of stores) {
        const ns = nsPerOpSync(RANDOM_OPS, (i) =>
          store.decideSync(inputs[order[i] ?? 0] ?? hotRoomy),
        );
        const floor = nsPerOpSync(RANDOM_OPS, (i) => {
          sink += bySubject.get((inputs[order[i] ?? 0] ?? hotRoomy).subject) ?? 0;
        });
        if (trial >= 0) {
          randomNs.get(count)?.push(ns);
          floorNs.get(count)?.push(floor);
        }
      }
    }
    if (sink < 0) throw new Error("unreachable: keeps the floor loop from being optimized away");
  }

  // The floor under the hot-key rows: one reading of the stores' clock, which every decision
  // reads once (rate-limiter-flexible reads `Date` once per call too), TRIALS rounds after a
  // warm-up. It says how much of what an aim leaves for a whole decision the clock alone takes.
  const clockNs: number[] = [];
  {
    let sink = 0;
    for (let trial = -1; trial < TRIALS; trial++) {
      const ns = nsPerOpSync(OPS, () => {
        sink += monotonicClock.nowMs();
      });
      if (trial >= 0) clockNs.push(ns);
    }
    if (sink < 0) throw new Error("unreachable: keeps the clock loop from being optimized away");
  }

  // Flood: a million unique keys into a store bounded at 100k (900k evictions). The subjects
  // are made beforehand, so the figure is the store's cost, not string building.
  const floodInputs = Array.from(
    { length: FLOOD_OPS },
    (_, i): DecideInput => ({ subject: `flood-${i}`, checks: [ROOMY] }),
  );
  const floodAt = (i: number): DecideInput => floodInputs[i] ?? hotRoomy;
  const flooded = new MemoryStore({ maxKeys: KEY_COUNT });
  const oursFloodNs = nsPerOpSync(FLOOD_OPS, (i) => flooded.decideSync(floodAt(i)));
  const naive = new NaiveMapLru(KEY_COUNT);
  for (let i = 0; i < KEY_COUNT; i++) naive.take(floodAt(i).subject, 0);
  const naiveFloodNs = nsPerOpSync(NAIVE_FLOOD_OPS, (i) =>
    naive.take(floodAt(KEY_COUNT + i).subject, 0),
  );
  floodInputs.length = 0;

  // Bytes per key, 100k keys each. Subject strings are built inside, so what each side retains
  // of them (our subjects, their prefixed keys) is counted.
  const oursBytes = await bytesPerKey(KEY_COUNT, async () => {
    const store = new MemoryStore({ maxKeys: KEY_COUNT });
    for (let i = 0; i < KEY_COUNT; i++) store.decideSync({ subject: `key-${i}`, checks: [ROOMY] });
    return store;
  });
  const theirsBytes = await bytesPerKey(KEY_COUNT, async () => {
    const limiter = new RateLimiterMemory({ points: 1e12, duration: THEIR_DURATION_SEC });
    for (let i = 0; i < KEY_COUNT; i++) await limiter.consume(`key-${i}`);
    return limiter;
  });

  const bytesRatio = theirsBytes / oursBytes;
  const SYNC = "sync vs promise";
  const AWAITED = "awaited on both sides";
  const rows: Row[] = [
    throughputRow(`allow, hot key (consumeSync, one limit), ${SYNC}`, allowHotSingle, 3),
    throughputRow(`allow, hot key (layered decideSync), ${SYNC}`, allowHot, 3),
    throughputRow(`allow, hot key (await decide), ${AWAITED}`, allowHotAwaited, 1.5),
    throughputRow(`reject, hot key (consumeSync, one limit), ${SYNC}`, rejectHotSingle, 20),
    throughputRow(`reject, hot key (layered decideSync), ${SYNC}`, rejectHot, 20),
    throughputRow(`reject, hot key (await decide), ${AWAITED}`, rejectHotAwaited, 1.5),
    throughputRow(`allow, 100k keys (consumeSync, one limit), ${SYNC}`, allowManySingle, 3),
    throughputRow(`allow, 100k keys (layered decideSync), ${SYNC}`, allowMany, 3),
    throughputRow(`allow, 100k keys (await decide), ${AWAITED}`, allowManyAwaited, 1.5),
    throughputRow(`reject, 100k keys (consumeSync, one limit), ${SYNC}`, rejectManySingle, 20),
    throughputRow(`reject, 100k keys (layered decideSync), ${SYNC}`, rejectMany, 20),
    throughputRow(`reject, 100k keys (await decide), ${AWAITED}`, rejectManyAwaited, 1.5),
    {
      what: "bytes per key, 100k keys",
      unit: "bytes",
      ours: oursBytes,
      theirs: theirsBytes,
      ratio: bytesRatio,
      bestRatio: null,
      aim: "<= 1/3 theirs",
      verdict: verdictOf(bytesRatio >= 3),
    },
    {
      what: "1M-key flood, bounded at 100k",
      unit: "ns/op",
      ours: oursFloodNs,
      theirs: null,
      ratio: null,
      bestRatio: null,
      aim: "~1 us (<= 1,000 ns)",
      verdict: verdictOf(oursFloodNs <= 1000),
    },
    {
      what: `naive Map LRU flood (${NAIVE_FLOOD_OPS / 1000}k ops past 100k)`,
      unit: "ns/op",
      ours: naiveFloodNs,
      theirs: null,
      ratio: null,
      bestRatio: null,
      aim: "(comparison)",
      verdict: "",
    },
  ];
  console.log(
    `node ${process.version}; medians of ${TRIALS} alternating rounds after a warm-up; throughput ratio = median of per-round ours/theirs (the verdict), best-round ratio = fastest round of each side; bytes ratio = theirs/ours`,
  );
  console.log(loadAtStart);
  console.log(loadLine("at end"));
  printTable(rows);
  const [small, large] = RANDOM_KEY_COUNTS;
  const smallNs = randomNs.get(small) ?? [];
  const largeNs = randomNs.get(large) ?? [];
  console.log(
    `random key order, layered decideSync: ${summary(smallNs, 0)} ns/decision at ${small.toLocaleString("en-US")} keys, ${summary(largeNs, 0)} at ${large.toLocaleString("en-US")} keys (median [min-max] of ${TRIALS} alternating rounds of ${RANDOM_OPS.toLocaleString("en-US")})`,
  );

  const smallFloor = floorNs.get(small) ?? [];
  const largeFloor = floorNs.get(large) ?? [];
  console.log(
    `  floor (a bare Map.get of the same subjects in the same order, same rounds): ${summary(smallFloor, 0)} ns at ${small.toLocaleString("en-US")} keys, ${summary(largeFloor, 0)} at ${large.toLocaleString("en-US")} keys; ratio ${summary(pairedRatios(largeFloor, smallFloor))}x. the store's own part (decision minus floor, per round): ${summary(differences(smallNs, smallFloor), 0)} ns at ${small.toLocaleString("en-US")}, ${summary(differences(largeNs, largeFloor), 0)} ns at ${large.toLocaleString("en-US")}`,
  );
  const clock = median(clockNs);
  console.log(
    `clock floor (one monotonicClock.nowMs() reading, what every decision of ours reads once; ${TRIALS} rounds of ${OPS.toLocaleString("en-US")}): ${summary(clockNs, 1)} ns. Against this run's rate-limiter-flexible, the 3x allow aim leaves ${(allowHotSingle.theirsNs / 3).toFixed(0)} ns for a whole hot-key decision (ours: ${allowHotSingle.oursNs.toFixed(0)} ns, ${(allowHotSingle.oursNs - clock).toFixed(0)} of it besides the clock) and the 20x reject aim ${(rejectHotSingle.theirsNs / 20).toFixed(0)} ns (ours: ${rejectHotSingle.oursNs.toFixed(0)} ns, ${(rejectHotSingle.oursNs - clock).toFixed(0)} besides the clock)`,
  );
  const targets = new Targets();
  for (const row of rows) {
    if (row.ratios !== undefined && row.minRatio !== undefined) {
      targets.atLeast(`in process: ${row.what} vs RateLimiterMemory`, row.ratios, row.minRatio);
    }
  }
  targets.atMost(
    `in process: random order, ns/decision at ${large.toLocaleString("en-US")} keys / at ${small.toLocaleString("en-US")} keys`,
    pairedRatios(largeNs, smallNs),
    1.5,
  );
  targets.atMost(
    `in process: random order, ns/decision at ${small.toLocaleString("en-US")} keys (main when filed: ${RANDOM_10K_BASELINE_NS})`,
    smallNs,
    RANDOM_10K_BASELINE_NS,
    " ns",
  );
  targets.holds(
    "in process: bytes per key at 100k keys, theirs / ours",
    `${bytesRatio.toFixed(1)}x (ours ${formatNumber(oursBytes)}, theirs ${formatNumber(theirsBytes)} bytes)`,
    bytesRatio >= 3,
    ">= 3x",
  );
  targets.holds(
    "in process: ns per decision in a 1M-key flood, bounded at 100k keys",
    `${formatNumber(oursFloodNs)} ns`,
    oursFloodNs <= 1000,
    "<= 1,000 ns",
  );
  targets.print("core targets");
  console.log(
    `flood: ${flooded.keyCount.toLocaleString("en-US")} keys held after ${FLOOD_OPS.toLocaleString("en-US")} unique keys (${(FLOOD_OPS - flooded.keyCount).toLocaleString("en-US")} evictions); naive LRU is ${(naiveFloodNs / oursFloodNs).toFixed(0)}x slower per op`,
  );
}
