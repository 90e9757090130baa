import { type Clock, monotonicClock } from "../clock";
import { bucketOf, decideLayered, peekLayered } from "../layered";
import { numberAt } from "../numeric";
import type { LimitState } from "../step-limit";
import type { DecideInput, LayeredDecision, LimiterStore } from "../types";

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

/**
 * The storage key of a check's bucket under a subject: `<subject length>:<subject>:<bucket>`.
 * The length prefix makes it collision-proof whatever the subject contains: the digits before the
 * first `:` say exactly where the subject ends, so `("a:b", "c")` and `("a", "b:c")` differ.
 */
export function memoryStorageKey(subject: string, bucket: string): string {
  return `${subject.length}:${subject}:${bucket}`;
}

/** Which algorithm a slot holds; 0 never appears in a live slot. */
const FIXED_WINDOW = 1;
const SLIDING_LOG = 2;
const SLIDING_WINDOW = 3;
const TOKEN_BUCKET = 4;
const LEAKY_METER = 5;

/** End of the recency list. */
const NO_SLOT = -1;

const INITIAL_CAPACITY = 1024;

/**
 * The in-process store: every decision is computed by the pure layered combiner, and this class
 * only keeps state, bounded and cheap.
 *
 * Layout: a `Map` from storage key to a slot index, and a slab of typed arrays indexed by slot:
 * the algorithm (1 byte), up to three numbers of state (8 bytes each; the third column only
 * exists once a sliding window counter has been stored), and an intrusive doubly linked recency
 * list (two 4-byte slot indices). A slot also holds a reference to its key so eviction can delete
 * it from the map, and a sliding log's entries, which vary in size, live in a side array. The
 * slab doubles as keys arrive, up to `maxKeys`.
 *
 * Eviction is O(1): the least recently used slot is the tail of the list, unlinking and relinking
 * are index writes, and the map deletion is one hash lookup. (A `Map` used as its own LRU, evicting
 * with `map.keys().next()`, walks over the holes that deletions leave at the front of its table
 * and costs tens of microseconds per operation under a flood of unique keys.)
 *
 * Time: every decision reads the injected clock once; by default the monotonic clock, never
 * `Date`, so moving the wall clock changes nothing.
 */
export class MemoryStore implements LimiterStore {
  readonly #maxKeys: number;
  readonly #clock: Clock;
  readonly #slotByKey = new Map<string, number>();
  #capacity: number;
  #used = 0;
  #keys: (string | undefined)[] = [];
  #algorithms: Uint8Array;
  #first: Float64Array;
  #second: Float64Array;
  #third: Float64Array | undefined;
  #logs: (readonly number[] | undefined)[] = [];
  /** Toward the most recently used end. */
  #newer: Int32Array;
  /** Toward the least recently used end. */
  #older: Int32Array;
  #newest = NO_SLOT;
  #oldest = NO_SLOT;

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
    this.#newer = new Int32Array(this.#capacity);
    this.#older = new Int32Array(this.#capacity);
  }

  /** Keys currently held; never above `maxKeys`. */
  get keyCount(): number {
    return this.#used;
  }

  async decide(input: DecideInput): Promise<LayeredDecision> {
    return this.decideSync(input);
  }

  async peek(input: DecideInput): Promise<LayeredDecision> {
    return this.peekSync(input);
  }

  /** `decide` without the promise, for the hot path: evaluate and, when admitted, consume. */
  decideSync(input: DecideInput): LayeredDecision {
    const nowMs = this.#clock.nowMs();
    const checks = input.checks;
    if (checks.length > this.#maxKeys) {
      throw new RangeError(
        `a decision with ${checks.length} checks cannot fit a store of ${this.#maxKeys} keys`,
      );
    }
    const keys: string[] = [];
    const slots: number[] = [];
    const states: (LimitState | undefined)[] = [];
    for (const check of checks) {
      const key = memoryStorageKey(input.subject, bucketOf(check));
      const slot = this.#slotByKey.get(key) ?? NO_SLOT;
      keys.push(key);
      slots.push(slot);
      states.push(slot === NO_SLOT ? undefined : this.#read(slot));
    }

    const result = decideLayered(states, checks, nowMs, input.cost ?? 1);

    // Existing keys first, each moved to the recent end, so that evictions made room for new
    // keys below can only take keys outside this decision (it has at most maxKeys checks).
    let index = 0;
    for (const slot of slots) {
      const state = result.states[index];
      if (slot !== NO_SLOT) {
        this.#touch(slot);
        if (state !== undefined && state !== states[index]) this.#write(slot, state);
      }
      index++;
    }
    index = 0;
    for (const slot of slots) {
      const state = result.states[index];
      const key = keys[index];
      if (slot === NO_SLOT && state !== undefined && key !== undefined) {
        this.#write(this.#allocate(key), state);
      }
      index++;
    }
    return result.decision;
  }

  /**
   * `peek` without the promise: the decision a request of `cost` would get now. Reads only: it
   * creates no key and does not count as use for eviction.
   */
  peekSync(input: DecideInput): LayeredDecision {
    const nowMs = this.#clock.nowMs();
    const states: (LimitState | undefined)[] = [];
    for (const check of input.checks) {
      const slot = this.#slotByKey.get(memoryStorageKey(input.subject, bucketOf(check)));
      states.push(slot === undefined ? undefined : this.#read(slot));
    }
    return peekLayered(states, input.checks, nowMs, input.cost ?? 1);
  }

  #read(slot: number): LimitState {
    switch (this.#algorithms[slot]) {
      case FIXED_WINDOW:
        return {
          algorithm: "fixed-window",
          windowStartMs: numberAt(this.#first, slot),
          count: numberAt(this.#second, slot),
        };
      case SLIDING_LOG:
        return { algorithm: "sliding-log", entries: this.#logs[slot] ?? [] };
      case SLIDING_WINDOW:
        return {
          algorithm: "sliding-window",
          windowStartMs: numberAt(this.#first, slot),
          currentCount: numberAt(this.#second, slot),
          previousCount: this.#third === undefined ? 0 : numberAt(this.#third, slot),
        };
      case TOKEN_BUCKET:
        return {
          algorithm: "token-bucket",
          tokens: numberAt(this.#first, slot),
          lastMs: numberAt(this.#second, slot),
        };
      case LEAKY_METER:
        return { algorithm: "leaky-meter", zeroRoomAtMs: numberAt(this.#first, slot) };
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

  /** A slot for a new key: a never-used one while the slab has room, else the LRU key's. */
  #allocate(key: string): number {
    let slot: number;
    if (this.#used < this.#maxKeys) {
      if (this.#used === this.#capacity) this.#grow();
      slot = this.#used++;
    } else {
      slot = this.#evictOldest();
    }
    this.#keys[slot] = key;
    this.#slotByKey.set(key, slot);
    this.#linkNewest(slot);
    return slot;
  }

  #evictOldest(): number {
    const slot = this.#oldest;
    this.#unlink(slot);
    const key = this.#keys[slot];
    if (key !== undefined) this.#slotByKey.delete(key);
    this.#keys[slot] = undefined;
    this.#logs[slot] = undefined;
    this.#algorithms[slot] = 0;
    return slot;
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
    const newer = numberAt(this.#newer, slot);
    const older = numberAt(this.#older, slot);
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
    if (this.#third !== undefined) this.#third = resized(this.#third, new Float64Array(capacity));
    this.#newer = resized(this.#newer, new Int32Array(capacity));
    this.#older = resized(this.#older, new Int32Array(capacity));
    this.#capacity = capacity;
  }
}

function resized<T extends Uint8Array | Int32Array | Float64Array>(from: T, to: T): T {
  to.set(from);
  return to;
}
