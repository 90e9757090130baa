import { assertName, assertTimeAndCost, assertValidChecks, assertValidLimit } from "../arguments";
import { type Clock, monotonicClock } from "../clock";
import { decisionOf, StepNumbers } from "../decision";
import {
  bucketOf,
  decideLayeredInto,
  type PreparedChecks,
  peekLayered,
  prepareChecks,
} from "../layered";
import { wholeUnits } from "../numeric";
import {
  algorithmCodeOf,
  FIXED_WINDOW,
  LEAKY_METER,
  type LimitState,
  limitSizeOf,
  SLIDING_LOG,
  SLIDING_WINDOW,
  stepLimit,
  stepNumbersInto,
  TOKEN_BUCKET,
} from "../step-limit";
import type {
  DecideInput,
  Decision,
  LayeredDecision,
  LimitCheck,
  LimiterStore,
  LimitSpec,
} from "../types";

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
 * One slot's record, 40 bytes, read through two views of one buffer: doubles 0 and 1 (bytes
 * 0-15) hold the state, 32-bit fields 4 to 8 (bytes 16-35) the algorithm and the links, and bytes
 * 36-39 pad the record to a whole number of doubles. Everything a decision reads or writes of a
 * key sits together, usually in one cache line, where one array per field costs a cache miss per
 * field once the keys outgrow the cache (measured: 1M keys in random order).
 */
const RECORD_BYTES = 40;
const FLOATS_PER_SLOT = RECORD_BYTES / 8;
const INTS_PER_SLOT = RECORD_BYTES / 4;
/** Doubles of a record. */
const FIRST = 0;
const SECOND = 1;
/** 32-bit fields of a record. */
const ALGORITHM = 4;
/** The next and previous slots of the same subject (a doubly linked chain), or NO_SLOT. */
const NEXT_OF_SUBJECT = 5;
const PREVIOUS_OF_SUBJECT = 6;
/** Toward the most recently used end. */
const NEWER = 7;
/** Toward the least recently used end. */
const OLDER = 8;

/**
 * The in-process store: every decision is computed by the limiter's own algorithms and layered
 * combination, and this class only keeps state, bounded and cheap.
 *
 * Hot path: a list of checks is prepared once (`prepareChecks`: validated, buckets and algorithm
 * codes laid out), so a decision validates nothing but its subject, time and cost. The stored
 * numbers of its keys go straight from the slab into the algorithms' kernels (`stepNumbersInto`,
 * the same arithmetic as the object steps) and back, with no state object built; a one-check
 * list skips even the prepared list's working space. What a decision allocates is what it
 * returns: a rejection that repeats the previous one for the same list exactly (a client retrying
 * within the same millisecond) is answered with one frozen decision, so it allocates nothing.
 * Sliding logs, whose state is a list, go through the layered combiner with state objects.
 *
 * A key is one check's bucket under one subject. Layout: a `Map` from subject to the first slot
 * of that subject's chain of keys, and a slab of fixed-size records indexed by slot, each holding
 * the algorithm, up to two numbers of state (8 bytes each), the subject's chain (next and previous
 * slot of the same subject) and an intrusive doubly linked recency list (two slot indices), 40
 * bytes in all ({@link RECORD_BYTES}). A sliding window counter's third number lives in a column
 * made once one is stored. A slot also refers to its subject and bucket strings; a sliding log's
 * entries, which vary in size, live in a side array. The slab doubles as keys arrive, up to
 * `maxKeys`.
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
  /** Per slot, FLOATS_PER_SLOT doubles of state; a view of the same buffer as `#ints`. */
  #floats: Float64Array;
  /** Per slot, INTS_PER_SLOT 32-bit fields: algorithm, subject chain and recency links. */
  #ints: Int32Array;
  #third: Float64Array | undefined;
  #logs: (readonly number[] | undefined)[] = [];
  #newest = NO_SLOT;
  #oldest = NO_SLOT;
  /** Per number of checks, arrays reused by every decision of that size (decisions never nest). */
  readonly #scratchByLength: (Scratch | undefined)[] = [];
  /** The slots of a prepared decision's checks, grown to the longest list seen. */
  #slots = new Int32Array(8);
  /** consumeSync's kernel output, and its last rejection (see `#rejectionOf`). */
  readonly #step = new StepNumbers();
  #rejection: Decision | undefined;
  #isRejectionShared = false;

  constructor(options: MemoryStoreOptions = {}) {
    const maxKeys = options.maxKeys ?? 100_000;
    if (!Number.isInteger(maxKeys) || maxKeys < 1 || maxKeys > 2 ** 31 - 1) {
      throw new RangeError(`maxKeys must be a whole number from 1 to 2^31 - 1, got ${maxKeys}`);
    }
    this.#maxKeys = maxKeys;
    this.#clock = options.clock ?? monotonicClock;
    this.#capacity = Math.min(maxKeys, INITIAL_CAPACITY);
    const buffer = new ArrayBuffer(this.#capacity * RECORD_BYTES);
    this.#floats = new Float64Array(buffer);
    this.#ints = new Int32Array(buffer);
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

  /**
   * `decide` without the promise, for the hot path: evaluate and, when admitted, consume. The
   * list of checks is prepared once (`prepareChecks`); a decision then reads the stored numbers
   * of its keys, runs the algorithms' kernels on them and writes numbers back, building no state
   * object. A rejection that repeats the previous one for the same list exactly is returned as
   * the same frozen decision. As with every validated list, do not change a list (or its checks)
   * once it has been used: pass a new list instead.
   */
  decideSync(input: DecideInput): LayeredDecision {
    const nowMs = this.#clock.nowMs();
    const subject = input.subject;
    assertName("subject", subject);
    const prepared = prepareChecks(input.checks);
    const length = prepared.length;
    if (length > this.#maxKeys) {
      throw new RangeError(
        `a decision with ${length} checks cannot fit a store of ${this.#maxKeys} keys`,
      );
    }
    const cost = input.cost === undefined ? 1 : input.cost;
    if (!prepared.isNumeric) return this.#decideStates(subject, prepared.checks, nowMs, cost);

    const firstSlot = this.#firstSlotBySubject.get(subject) ?? NO_SLOT;
    if (length === 1) return this.#decideOne(prepared, subject, firstSlot, nowMs, cost);
    if (this.#slots.length < length) this.#slots = new Int32Array(length);
    const slots = this.#slots;
    const { buckets, codes, hasState, numbers, writes } = prepared;
    const ints = this.#ints;
    const floats = this.#floats;
    for (let index = 0; index < length; index++) {
      const slot = this.#findSlot(firstSlot, buckets[index] as string);
      slots[index] = slot;
      const code = codes[index] as number;
      if (slot !== NO_SLOT && ints[slot * INTS_PER_SLOT + ALGORITHM] === code) {
        const at = slot * FLOATS_PER_SLOT;
        hasState[index] = 1;
        numbers[index * 3] = floats[at + FIRST] as number;
        numbers[index * 3 + 1] = floats[at + SECOND] as number;
        numbers[index * 3 + 2] = code === SLIDING_WINDOW ? this.#thirdAt(slot) : 0;
      } else {
        hasState[index] = 0;
      }
    }

    const decision = prepared.decide(nowMs, cost);

    // Existing keys first, each moved to the recent end, so that evictions made room for new
    // keys below can only take keys outside this decision (it has at most maxKeys checks).
    for (let index = 0; index < length; index++) {
      const slot = slots[index] as number;
      if (slot !== NO_SLOT) {
        this.#touch(slot);
        if (writes[index] === 1) this.#writeNumbers(slot, codes[index] as number, numbers, index);
      }
    }
    let anchorSlot = firstSlot;
    for (let index = 0; index < length; index++) {
      if (slots[index] === NO_SLOT && writes[index] === 1) {
        anchorSlot = this.#allocate(subject, buckets[index] as string, anchorSlot);
        this.#writeNumbers(anchorSlot, codes[index] as number, numbers, index);
      }
    }
    return decision;
  }

  /** `decideSync` for a list of one check with a kernel: no working space, no loops. */
  #decideOne(
    prepared: PreparedChecks,
    subject: string,
    firstSlot: number,
    nowMs: number,
    cost: number,
  ): LayeredDecision {
    const bucket = prepared.buckets[0] as string;
    const code = prepared.codes[0] as number;
    const slot = this.#findSlot(firstSlot, bucket);
    let decision: LayeredDecision;
    if (slot !== NO_SLOT && intAt(this.#ints, slot, ALGORITHM) === code) {
      const floats = this.#floats;
      const at = slot * FLOATS_PER_SLOT;
      decision = prepared.decideOne(
        true,
        floats[at + FIRST] as number,
        floats[at + SECOND] as number,
        code === SLIDING_WINDOW ? this.#thirdAt(slot) : 0,
        nowMs,
        cost,
      );
    } else {
      decision = prepared.decideOne(false, 0, 0, 0, nowMs, cost);
    }
    if (slot === NO_SLOT) {
      this.#writeStep(this.#allocate(subject, bucket, firstSlot), code, prepared.onlyStep);
    } else {
      this.#touch(slot);
      this.#writeStep(slot, code, prepared.onlyStep);
    }
    return decision;
  }

  /** `decideSync` for lists with a sliding log: states as objects, through the combiner. */
  #decideStates(
    subject: string,
    checks: readonly LimitCheck[],
    nowMs: number,
    cost: number,
  ): LayeredDecision {
    const firstSlot = this.#firstSlotBySubject.get(subject) ?? NO_SLOT;
    const { slots, states, next } = this.#scratchFor(checks.length);
    let index = 0;
    for (const check of checks) {
      const slot = this.#findSlot(firstSlot, bucketOf(check));
      slots[index] = slot;
      states[index] = slot === NO_SLOT ? undefined : this.#read(slot);
      index++;
    }

    const decision = decideLayeredInto(states, checks, nowMs, cost, next);

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
   * bucket's refill), nothing else, and one that repeats the previous rejection exactly is
   * returned as the same frozen decision. The limit is validated the first time it is seen.
   */
  consumeSync(subject: string, bucket: string, limit: LimitSpec, cost = 1): Decision {
    const nowMs = this.#clock.nowMs();
    assertName("subject", subject);
    assertName("bucket", bucket);
    assertTimeAndCost(nowMs, cost);
    assertValidLimit(limit);
    const code = algorithmCodeOf(limit);
    const firstSlot = this.#firstSlotBySubject.get(subject) ?? NO_SLOT;
    const slot = this.#findSlot(firstSlot, bucket);
    if (code === SLIDING_LOG) {
      const step = stepLimit(slot === NO_SLOT ? undefined : this.#read(slot), limit, nowMs, cost);
      if (slot === NO_SLOT) {
        this.#write(this.#allocate(subject, bucket, firstSlot), step.state);
      } else {
        this.#touch(slot);
        this.#write(slot, step.state);
      }
      return step.decision;
    }

    const out = this.#step;
    if (slot !== NO_SLOT && intAt(this.#ints, slot, ALGORITHM) === code) {
      const floats = this.#floats;
      const at = slot * FLOATS_PER_SLOT;
      stepNumbersInto(
        code,
        true,
        floats[at + FIRST] as number,
        floats[at + SECOND] as number,
        code === SLIDING_WINDOW ? this.#thirdAt(slot) : 0,
        limit,
        nowMs,
        cost,
        out,
      );
    } else {
      stepNumbersInto(code, false, 0, 0, 0, limit, nowMs, cost, out);
    }
    if (slot === NO_SLOT) {
      this.#writeStep(this.#allocate(subject, bucket, firstSlot), code, out);
    } else {
      this.#touch(slot);
      this.#writeStep(slot, code, out);
    }
    return out.allowed ? decisionOf(out, limitSizeOf(limit)) : this.#rejectionOf(out, limit);
  }

  /** consumeSync's rejection: the shared frozen one when it repeats the last, else a new one. */
  #rejectionOf(out: StepNumbers, limit: LimitSpec): Decision {
    const size = limitSizeOf(limit);
    const last = this.#rejection;
    if (
      last !== undefined &&
      last.limit === size &&
      last.reason === out.reason &&
      last.retryAfterMs === out.retryAfterMs &&
      last.resetAfterMs === out.resetAfterMs &&
      last.remaining === wholeUnits(out.available, size)
    ) {
      if (this.#isRejectionShared) return last;
      const shared = Object.freeze(decisionOf(out, size));
      this.#rejection = shared;
      this.#isRejectionShared = true;
      return shared;
    }
    const fresh = decisionOf(out, size);
    this.#rejection = fresh;
    this.#isRejectionShared = false;
    return fresh;
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
      slot = intAt(this.#ints, slot, NEXT_OF_SUBJECT);
    }
    return slot;
  }

  #read(slot: number): LimitState {
    const floats = this.#floats;
    switch (intAt(this.#ints, slot, ALGORITHM)) {
      case FIXED_WINDOW:
        return {
          algorithm: "fixed-window",
          windowStartMs: floatAt(floats, slot, FIRST),
          count: floatAt(floats, slot, SECOND),
        };
      case SLIDING_LOG:
        return { algorithm: "sliding-log", entries: this.#logs[slot] ?? [] };
      case SLIDING_WINDOW:
        return {
          algorithm: "sliding-window",
          windowStartMs: floatAt(floats, slot, FIRST),
          currentCount: floatAt(floats, slot, SECOND),
          previousCount: this.#third === undefined ? 0 : (this.#third[slot] ?? 0),
        };
      case TOKEN_BUCKET:
        return {
          algorithm: "token-bucket",
          tokens: floatAt(floats, slot, FIRST),
          lastMs: floatAt(floats, slot, SECOND),
        };
      case LEAKY_METER:
        return { algorithm: "leaky-meter", zeroRoomAtMs: floatAt(floats, slot, FIRST) };
      default:
        throw new RangeError(`slot ${slot} holds no state`);
    }
  }

  #write(slot: number, state: LimitState): void {
    const ints = this.#ints;
    const algorithmAt = slot * INTS_PER_SLOT + ALGORITHM;
    const at = slot * FLOATS_PER_SLOT;
    const floats = this.#floats;
    if (ints[algorithmAt] === SLIDING_LOG && state.algorithm !== "sliding-log") {
      this.#logs[slot] = undefined;
    }
    switch (state.algorithm) {
      case "fixed-window":
        ints[algorithmAt] = FIXED_WINDOW;
        floats[at + FIRST] = state.windowStartMs;
        floats[at + SECOND] = state.count;
        return;
      case "sliding-log":
        ints[algorithmAt] = SLIDING_LOG;
        this.#logs[slot] = state.entries;
        return;
      case "sliding-window": {
        ints[algorithmAt] = SLIDING_WINDOW;
        floats[at + FIRST] = state.windowStartMs;
        floats[at + SECOND] = state.currentCount;
        this.#third ??= new Float64Array(this.#capacity);
        this.#third[slot] = state.previousCount;
        return;
      }
      case "token-bucket":
        ints[algorithmAt] = TOKEN_BUCKET;
        floats[at + FIRST] = state.tokens;
        floats[at + SECOND] = state.lastMs;
        return;
      case "leaky-meter":
        ints[algorithmAt] = LEAKY_METER;
        floats[at + FIRST] = state.zeroRoomAtMs;
        return;
      default: {
        const unknown: never = state;
        throw new TypeError(`unknown limit state: ${JSON.stringify(unknown)}`);
      }
    }
  }

  /** A sliding window's third number (its previous window's count). */
  #thirdAt(slot: number): number {
    return this.#third === undefined ? 0 : (this.#third[slot] ?? 0);
  }

  /** Stores check `index`'s numbers from a prepared decision (`PreparedChecks.numbers`). */
  #writeNumbers(slot: number, code: number, numbers: readonly number[], index: number): void {
    this.#writeState(
      slot,
      code,
      numbers[index * 3] as number,
      numbers[index * 3 + 1] as number,
      numbers[index * 3 + 2] as number,
    );
  }

  #writeStep(slot: number, code: number, out: StepNumbers): void {
    this.#writeState(slot, code, out.first, out.second, out.third);
  }

  /** Stores a kernel's state (`code` is never SLIDING_LOG): what `#write` stores for its object. */
  #writeState(slot: number, code: number, first: number, second: number, third: number): void {
    const algorithmAt = slot * INTS_PER_SLOT + ALGORITHM;
    if (this.#ints[algorithmAt] === SLIDING_LOG) this.#logs[slot] = undefined;
    this.#ints[algorithmAt] = code;
    const at = slot * FLOATS_PER_SLOT;
    this.#floats[at + FIRST] = first;
    if (code !== LEAKY_METER) this.#floats[at + SECOND] = second;
    if (code === SLIDING_WINDOW) {
      this.#third ??= new Float64Array(this.#capacity);
      this.#third[slot] = third;
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
    const ints = this.#ints;
    const at = slot * INTS_PER_SLOT;
    if (anchor === NO_SLOT) {
      this.#firstSlotBySubject.set(subject, slot);
      ints[at + PREVIOUS_OF_SUBJECT] = NO_SLOT;
      ints[at + NEXT_OF_SUBJECT] = NO_SLOT;
    } else {
      const after = intAt(ints, anchor, NEXT_OF_SUBJECT);
      ints[at + PREVIOUS_OF_SUBJECT] = anchor;
      ints[at + NEXT_OF_SUBJECT] = after;
      ints[anchor * INTS_PER_SLOT + NEXT_OF_SUBJECT] = slot;
      if (after !== NO_SLOT) ints[after * INTS_PER_SLOT + PREVIOUS_OF_SUBJECT] = slot;
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
    this.#ints[slot * INTS_PER_SLOT + ALGORITHM] = 0;
    return slot;
  }

  /** Drops `slot` from its subject's chain, and the subject from the map if that was its last. */
  #unlinkFromSubject(subject: string, slot: number): void {
    const ints = this.#ints;
    const previous = intAt(ints, slot, PREVIOUS_OF_SUBJECT);
    const next = intAt(ints, slot, NEXT_OF_SUBJECT);
    if (next !== NO_SLOT) ints[next * INTS_PER_SLOT + PREVIOUS_OF_SUBJECT] = previous;
    if (previous !== NO_SLOT) ints[previous * INTS_PER_SLOT + NEXT_OF_SUBJECT] = next;
    else if (next === NO_SLOT) this.#firstSlotBySubject.delete(subject);
    else this.#firstSlotBySubject.set(subject, next);
  }

  #touch(slot: number): void {
    if (slot === this.#newest) return;
    this.#unlink(slot);
    this.#linkNewest(slot);
  }

  #linkNewest(slot: number): void {
    const ints = this.#ints;
    const at = slot * INTS_PER_SLOT;
    ints[at + OLDER] = this.#newest;
    ints[at + NEWER] = NO_SLOT;
    if (this.#newest === NO_SLOT) this.#oldest = slot;
    else ints[this.#newest * INTS_PER_SLOT + NEWER] = slot;
    this.#newest = slot;
  }

  #unlink(slot: number): void {
    const ints = this.#ints;
    const newer = intAt(ints, slot, NEWER);
    const older = intAt(ints, slot, OLDER);
    if (newer === NO_SLOT) this.#newest = older;
    else ints[newer * INTS_PER_SLOT + OLDER] = older;
    if (older === NO_SLOT) this.#oldest = newer;
    else ints[older * INTS_PER_SLOT + NEWER] = newer;
  }

  #grow(): void {
    const capacity = Math.min(this.#maxKeys, this.#capacity * 2);
    const buffer = new ArrayBuffer(capacity * RECORD_BYTES);
    new Uint8Array(buffer).set(new Uint8Array(this.#floats.buffer));
    this.#floats = new Float64Array(buffer);
    this.#ints = new Int32Array(buffer);
    if (this.#third !== undefined) {
      const third = new Float64Array(capacity);
      third.set(this.#third);
      this.#third = third;
    }
    this.#capacity = capacity;
  }
}

/*
 * Slab reads. Slots are always within the slab by construction; the checks turn a bug into an
 * error instead of a NaN, and one helper per array type keeps each read monomorphic (fast).
 */
function floatAt(floats: Float64Array, slot: number, field: number): number {
  const value = floats[slot * FLOATS_PER_SLOT + field];
  if (value === undefined) throw new RangeError(`slot ${slot} is outside the slab`);
  return value;
}

function intAt(ints: Int32Array, slot: number, field: number): number {
  const value = ints[slot * INTS_PER_SLOT + field];
  if (value === undefined) throw new RangeError(`slot ${slot} is outside the slab`);
  return value;
}
