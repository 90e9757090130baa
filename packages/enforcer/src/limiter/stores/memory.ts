import { assertName, assertTimeAndCost, assertValidChecks, assertValidLimit } from "../arguments";
import { type Clock, monotonicClock } from "../clock";
import { bucketOf, decideLayeredInto, peekLayered } from "../layered";
import { type LimitState, stepLimit } from "../step-limit";
import type { DecideInput, Decision, LayeredDecision, LimiterStore, LimitSpec } from "../types";

export interface MemoryStoreOptions {
  /**
   * Most keys held at once (one key is one check's bucket under one subject). Beyond it the least
   * recently used key is evicted, which is safe: a key nobody has touched for a while has refilled
   * or had its window expire, so forgetting it changes nothing but the memory it held. A bound
   * well above the number of keys active within your longest window keeps that true.
   * @default 100_000
   */
  readonly maxKeys?: number;
  /**
   * Where durations come from. Keep the monotonic default in production: a wall-clock step would
   * refill or drain every bucket at once.
   * @default monotonicClock
   */
  readonly clock?: Clock;
}

/** Which algorithm a slot holds; 0 never appears in a live slot. */
const FIXED_WINDOW = 1;
const SLIDING_LOG = 2;
const SLIDING_WINDOW = 3;
const TOKEN_BUCKET = 4;
const LEAKY_METER = 5;

/** Working arrays for one decision: its checks' slots, stored states and states to store. */
interface Scratch {
  readonly slots: number[];
  readonly states: (LimitState | undefined)[];
  readonly next: (LimitState | undefined)[];
}

/** End of the recency list. */
const NO_SLOT = -1;

const INITIAL_CAPACITY = 1024;

/**
 * The in-process store: every decision is computed by the pure layered combiner, and this class
 * only keeps state, bounded and cheap.
 *
 * A key is one check's bucket under one subject. Layout: a `Map` from subject to the first slot
 * of that subject's chain of keys, and a slab of typed arrays indexed by slot: the algorithm
 * (1 byte), up to three numbers of state (8 bytes each; the third column only exists once a
 * sliding window counter has been stored), the subject's chain (next and previous slot of the
 * same subject, 4 bytes each) and an intrusive doubly linked recency list (two 4-byte slot
 * indices). A slot also refers to its subject and bucket strings; a sliding log's entries, which
 * vary in size, live in a side array. The slab doubles as keys arrive, up to `maxKeys`.
 *
 * Keys are never built by joining strings: the subject is looked up as given and each bucket is
 * compared exactly along the subject's chain (a handful of slots: one per layer), so no subject
 * or bucket, whatever characters it holds, can collide with another, and a decision costs one
 * hash lookup however many layers it checks.
 *
 * Eviction is O(1): the least recently used slot is the tail of the recency list, unlinking and
 * relinking are index writes, and dropping it from its subject's chain is at most one map write
 * (a deletion when it was the subject's last key). (A `Map` used as its own LRU, evicting with
 * `map.keys().next()`, walks over the holes deletions leave at the front of its table.)
 *
 * Time: every decision reads the injected clock once; by default the monotonic clock, never
 * `Date`, so moving the wall clock changes nothing.
 */
export class MemoryStore implements LimiterStore {
  readonly #maxKeys: number;
  readonly #clock: Clock;
  readonly #firstSlotBySubject = new Map<string, number>();
  #capacity: number;
  #used = 0;
  #subjects: (string | undefined)[] = [];
  #buckets: (string | undefined)[] = [];
  #algorithms: Uint8Array;
  #first: Float64Array;
  #second: Float64Array;
  #third: Float64Array | undefined;
  #logs: (readonly number[] | undefined)[] = [];
  /** The next and previous slots of the same subject (a doubly linked chain), or NO_SLOT. */
  #nextOfSubject: Int32Array;
  #previousOfSubject: Int32Array;
  /** Toward the most recently used end. */
  #newer: Int32Array;
  /** Toward the least recently used end. */
  #older: Int32Array;
  #newest = NO_SLOT;
  #oldest = NO_SLOT;
  /** Per number of checks, arrays reused by every decision of that size (decisions never nest). */
  readonly #scratchByLength: (Scratch | undefined)[] = [];

  constructor(options: MemoryStoreOptions = {}) {
    const maxKeys = options.maxKeys ?? 100_000;
    if (!Number.isInteger(maxKeys) || maxKeys < 1 || maxKeys > 2 ** 31 - 1) {
      throw new RangeError(`maxKeys must be a whole number from 1 to 2^31 - 1, got ${maxKeys}`);
    }
    this.#maxKeys = maxKeys;
    this.#clock = options.clock ?? monotonicClock;
    this.#capacity = Math.min(maxKeys, INITIAL_CAPACITY);
    this.#algorithms = new Uint8Array(this.#capacity);
    this.#first = new Float64Array(this.#capacity);
    this.#second = new Float64Array(this.#capacity);
    this.#nextOfSubject = new Int32Array(this.#capacity);
    this.#previousOfSubject = new Int32Array(this.#capacity);
    this.#newer = new Int32Array(this.#capacity);
    this.#older = new Int32Array(this.#capacity);
  }

  /** Keys currently held; never above `maxKeys`. */
  get keyCount(): number {
    return this.#used;
  }

  // Not `async`: an already-settled promise costs the awaiting caller one microtask, where an
  // async function's implicit promise costs more on this path. Errors still reject, never throw.
  decide(input: DecideInput): Promise<LayeredDecision> {
    try {
      return Promise.resolve(this.decideSync(input));
    } catch (error: unknown) {
      return Promise.reject(error);
    }
  }

  peek(input: DecideInput): Promise<LayeredDecision> {
    try {
      return Promise.resolve(this.peekSync(input));
    } catch (error: unknown) {
      return Promise.reject(error);
    }
  }

  /** `decide` without the promise, for the hot path: evaluate and, when admitted, consume. */
  decideSync(input: DecideInput): LayeredDecision {
    const nowMs = this.#clock.nowMs();
    const { subject, checks } = input;
    assertName("subject", subject);
    assertValidChecks(checks);
    if (checks.length > this.#maxKeys) {
      throw new RangeError(
        `a decision with ${checks.length} checks cannot fit a store of ${this.#maxKeys} keys`,
      );
    }
    const firstSlot = this.#firstSlotBySubject.get(subject) ?? NO_SLOT;
    const { slots, states, next } = this.#scratchFor(checks.length);
    let index = 0;
    for (const check of checks) {
      const slot = this.#findSlot(firstSlot, bucketOf(check));
      slots[index] = slot;
      states[index] = slot === NO_SLOT ? undefined : this.#read(slot);
      index++;
    }

    const decision = decideLayeredInto(
      states,
      checks,
      nowMs,
      input.cost === undefined ? 1 : input.cost,
      next,
    );

    // Existing keys first, each moved to the recent end, so that evictions made room for new
    // keys below can only take keys outside this decision (it has at most maxKeys checks).
    index = 0;
    for (const slot of slots) {
      const state = next[index];
      if (slot !== NO_SLOT) {
        this.#touch(slot);
        if (state !== undefined && state !== states[index]) this.#write(slot, state);
      }
      index++;
    }
    index = 0;
    let anchorSlot = firstSlot;
    for (const check of checks) {
      const state = next[index];
      if (slots[index] === NO_SLOT && state !== undefined) {
        anchorSlot = this.#allocate(subject, bucketOf(check), anchorSlot);
        this.#write(anchorSlot, state);
      }
      index++;
    }
    return decision;
  }

  /**
   * One enforced limit, no layering: the fast path for a gateway that checks a single limit per
   * key (and the operation single-limit libraries offer). The same algorithms and the same stored
   * state as `decideSync` with one enforced check, so the two can be mixed on one key; it only
   * skips building a layered decision. A rejection writes back what the algorithm writes (a token
   * bucket's refill), nothing else. The limit is validated the first time it is seen.
   */
  consumeSync(subject: string, bucket: string, limit: LimitSpec, cost = 1): Decision {
    const nowMs = this.#clock.nowMs();
    assertName("subject", subject);
    assertName("bucket", bucket);
    assertTimeAndCost(nowMs, cost);
    assertValidLimit(limit);
    const firstSlot = this.#firstSlotBySubject.get(subject) ?? NO_SLOT;
    const slot = this.#findSlot(firstSlot, bucket);
    const step = stepLimit(slot === NO_SLOT ? undefined : this.#read(slot), limit, nowMs, cost);
    if (slot === NO_SLOT) {
      this.#write(this.#allocate(subject, bucket, firstSlot), step.state);
    } else {
      this.#touch(slot);
      this.#write(slot, step.state);
    }
    return step.decision;
  }

  /**
   * `peek` without the promise: the decision a request of `cost` would get now. Reads only: it
   * creates no key and does not count as use for eviction.
   */
  peekSync(input: DecideInput): LayeredDecision {
    const nowMs = this.#clock.nowMs();
    assertName("subject", input.subject);
    assertValidChecks(input.checks);
    const firstSlot = this.#firstSlotBySubject.get(input.subject) ?? NO_SLOT;
    const states: (LimitState | undefined)[] = [];
    for (const check of input.checks) {
      const slot = this.#findSlot(firstSlot, bucketOf(check));
      states.push(slot === NO_SLOT ? undefined : this.#read(slot));
    }
    return peekLayered(states, input.checks, nowMs, input.cost === undefined ? 1 : input.cost);
  }

  /**
   * Arrays of exactly `length` elements for one decision, allocated once per length: reusing them
   * saves three allocations per decision, and never resizing them avoids the slow path that
   * setting an array's `length` takes.
   */
  #scratchFor(length: number): Scratch {
    const existing = this.#scratchByLength[length];
    if (existing !== undefined) return existing;
    const scratch: Scratch = {
      slots: new Array<number>(length).fill(NO_SLOT),
      states: new Array<LimitState | undefined>(length).fill(undefined),
      next: new Array<LimitState | undefined>(length).fill(undefined),
    };
    this.#scratchByLength[length] = scratch;
    return scratch;
  }

  /** The slot of `bucket` in the chain starting at `firstSlot`, or NO_SLOT. */
  #findSlot(firstSlot: number, bucket: string): number {
    let slot = firstSlot;
    while (slot !== NO_SLOT && this.#buckets[slot] !== bucket) {
      slot = linkAt(this.#nextOfSubject, slot);
    }
    return slot;
  }

  #read(slot: number): LimitState {
    switch (this.#algorithms[slot]) {
      case FIXED_WINDOW:
        return {
          algorithm: "fixed-window",
          windowStartMs: floatAt(this.#first, slot),
          count: floatAt(this.#second, slot),
        };
      case SLIDING_LOG:
        return { algorithm: "sliding-log", entries: this.#logs[slot] ?? [] };
      case SLIDING_WINDOW:
        return {
          algorithm: "sliding-window",
          windowStartMs: floatAt(this.#first, slot),
          currentCount: floatAt(this.#second, slot),
          previousCount: this.#third === undefined ? 0 : floatAt(this.#third, slot),
        };
      case TOKEN_BUCKET:
        return {
          algorithm: "token-bucket",
          tokens: floatAt(this.#first, slot),
          lastMs: floatAt(this.#second, slot),
        };
      case LEAKY_METER:
        return { algorithm: "leaky-meter", zeroRoomAtMs: floatAt(this.#first, slot) };
      default:
        throw new RangeError(`slot ${slot} holds no state`);
    }
  }

  #write(slot: number, state: LimitState): void {
    if (this.#algorithms[slot] === SLIDING_LOG && state.algorithm !== "sliding-log") {
      this.#logs[slot] = undefined;
    }
    switch (state.algorithm) {
      case "fixed-window":
        this.#algorithms[slot] = FIXED_WINDOW;
        this.#first[slot] = state.windowStartMs;
        this.#second[slot] = state.count;
        return;
      case "sliding-log":
        this.#algorithms[slot] = SLIDING_LOG;
        this.#logs[slot] = state.entries;
        return;
      case "sliding-window": {
        this.#algorithms[slot] = SLIDING_WINDOW;
        this.#first[slot] = state.windowStartMs;
        this.#second[slot] = state.currentCount;
        this.#third ??= new Float64Array(this.#capacity);
        this.#third[slot] = state.previousCount;
        return;
      }
      case "token-bucket":
        this.#algorithms[slot] = TOKEN_BUCKET;
        this.#first[slot] = state.tokens;
        this.#second[slot] = state.lastMs;
        return;
      case "leaky-meter":
        this.#algorithms[slot] = LEAKY_METER;
        this.#first[slot] = state.zeroRoomAtMs;
        return;
      default: {
        const unknown: never = state;
        throw new TypeError(`unknown limit state: ${JSON.stringify(unknown)}`);
      }
    }
  }

  /**
   * A slot for a new key: a never-used one while the slab has room, else the LRU key's. It joins
   * its subject's chain next to `anchorSlot`, any slot of that subject (NO_SLOT if none), which
   * saves a map lookup per new key.
   */
  #allocate(subject: string, bucket: string, anchorSlot: number): number {
    let anchor = anchorSlot;
    let slot: number;
    if (this.#used < this.#maxKeys) {
      if (this.#used === this.#capacity) this.#grow();
      slot = this.#used++;
    } else {
      slot = this.#evictOldest();
      if (slot === anchor) anchor = this.#firstSlotBySubject.get(subject) ?? NO_SLOT;
    }
    this.#subjects[slot] = subject;
    this.#buckets[slot] = bucket;
    if (anchor === NO_SLOT) {
      this.#firstSlotBySubject.set(subject, slot);
      this.#previousOfSubject[slot] = NO_SLOT;
      this.#nextOfSubject[slot] = NO_SLOT;
    } else {
      const after = linkAt(this.#nextOfSubject, anchor);
      this.#previousOfSubject[slot] = anchor;
      this.#nextOfSubject[slot] = after;
      this.#nextOfSubject[anchor] = slot;
      if (after !== NO_SLOT) this.#previousOfSubject[after] = slot;
    }
    this.#linkNewest(slot);
    return slot;
  }

  #evictOldest(): number {
    const slot = this.#oldest;
    this.#unlink(slot);
    const subject = this.#subjects[slot];
    if (subject !== undefined) this.#unlinkFromSubject(subject, slot);
    this.#subjects[slot] = undefined;
    this.#buckets[slot] = undefined;
    this.#logs[slot] = undefined;
    this.#algorithms[slot] = 0;
    return slot;
  }

  /** Drops `slot` from its subject's chain, and the subject from the map if that was its last. */
  #unlinkFromSubject(subject: string, slot: number): void {
    const previous = linkAt(this.#previousOfSubject, slot);
    const next = linkAt(this.#nextOfSubject, slot);
    if (next !== NO_SLOT) this.#previousOfSubject[next] = previous;
    if (previous !== NO_SLOT) this.#nextOfSubject[previous] = next;
    else if (next === NO_SLOT) this.#firstSlotBySubject.delete(subject);
    else this.#firstSlotBySubject.set(subject, next);
  }

  #touch(slot: number): void {
    if (slot === this.#newest) return;
    this.#unlink(slot);
    this.#linkNewest(slot);
  }

  #linkNewest(slot: number): void {
    this.#older[slot] = this.#newest;
    this.#newer[slot] = NO_SLOT;
    if (this.#newest === NO_SLOT) this.#oldest = slot;
    else this.#newer[this.#newest] = slot;
    this.#newest = slot;
  }

  #unlink(slot: number): void {
    const newer = linkAt(this.#newer, slot);
    const older = linkAt(this.#older, slot);
    if (newer === NO_SLOT) this.#newest = older;
    else this.#older[newer] = older;
    if (older === NO_SLOT) this.#oldest = newer;
    else this.#newer[older] = newer;
  }

  #grow(): void {
    const capacity = Math.min(this.#maxKeys, this.#capacity * 2);
    this.#algorithms = resized(this.#algorithms, new Uint8Array(capacity));
    this.#first = resized(this.#first, new Float64Array(capacity));
    this.#second = resized(this.#second, new Float64Array(capacity));
    this.#nextOfSubject = resized(this.#nextOfSubject, new Int32Array(capacity));
    this.#previousOfSubject = resized(this.#previousOfSubject, new Int32Array(capacity));
    if (this.#third !== undefined) this.#third = resized(this.#third, new Float64Array(capacity));
    this.#newer = resized(this.#newer, new Int32Array(capacity));
    this.#older = resized(this.#older, new Int32Array(capacity));
    this.#capacity = capacity;
  }
}

/*
 * Slab reads. Slots are always within the slab by construction; the checks turn a bug into an
 * error instead of a NaN, and one helper per array type keeps each read monomorphic (fast).
 */
function floatAt(column: Float64Array, slot: number): number {
  const value = column[slot];
  if (value === undefined) throw new RangeError(`slot ${slot} is outside the slab`);
  return value;
}

function linkAt(links: Int32Array, slot: number): number {
  const value = links[slot];
  if (value === undefined) throw new RangeError(`slot ${slot} is outside the slab`);
  return value;
}

function resized<T extends Uint8Array | Int32Array | Float64Array>(from: T, to: T): T {
  to.set(from);
  return to;
}
