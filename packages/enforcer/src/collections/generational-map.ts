/**
 * A bounded map in two generations, the one cache of this kind in the package (the decision hot
 * path's leases and resolutions, and the policy's prepared customers): a lookup finds a key in the young
 * generation (one `Map.get`) or moves it there from the old one; when the young generation would
 * pass half the bound, the old generation is dropped (each value handed to `onDrop`) and the young
 * one becomes it. So at most `maxWeight` is held, a key in use is never dropped, and a lookup pays
 * no recency list upkeep: `BoundedLru`'s move-to-front was a tenth of a leased decision's time in
 * a profile. The price is an approximate order: what goes is whatever was not used during a whole
 * generation, not exactly the least recently used.
 *
 * Each value has a weight (`weightOf`, 1 by default) counted against the bound when it is put in;
 * a value's weight must not change while it is in the map (take it out, change it, put it back).
 */
export interface GenerationalMapOptions<V> {
  /** Most weight held; at least 1 (with 1 there is no old generation: a new key replaces all). */
  readonly maxWeight: number;
  /** @default () => 1 */
  readonly weightOf?: (value: V) => number;
  /** Told of each value dropped with the old generation (not of `delete` or `clear`). */
  readonly onDrop?: (value: V) => void;
}

export class GenerationalMap<K, V> {
  #young = new Map<K, V>();
  #old = new Map<K, V>();
  #youngWeight = 0;
  #oldWeight = 0;
  readonly #generationWeight: number;
  readonly #keepsOld: boolean;
  readonly #weightOf: (value: V) => number;
  readonly #onDrop: ((value: V) => void) | undefined;

  constructor(options: GenerationalMapOptions<V>) {
    this.#keepsOld = options.maxWeight >= 2;
    this.#generationWeight = this.#keepsOld ? Math.floor(options.maxWeight / 2) : 1;
    this.#weightOf = options.weightOf ?? (() => 1);
    this.#onDrop = options.onDrop;
  }

  /** Keys held. */
  get size(): number {
    return this.#young.size + this.#old.size;
  }

  /** Weight held; at most `maxWeight`. */
  get weight(): number {
    return this.#youngWeight + this.#oldWeight;
  }

  /** The value, moved to the young generation; undefined when the key is not held. */
  get(key: K): V | undefined {
    const young = this.#young.get(key);
    if (young !== undefined) return young;
    const old = this.#old.get(key);
    if (old === undefined) return undefined;
    this.#old.delete(key);
    this.#oldWeight -= this.#weightOf(old);
    this.#putYoung(key, old);
    return old;
  }

  /** Puts a key that is not held (`get` it first) into the young generation. */
  set(key: K, value: V): void {
    this.#putYoung(key, value);
  }

  /** Takes a key out of either generation; its value is not dropped (`onDrop` is not told). */
  delete(key: K): void {
    const young = this.#young.get(key);
    if (young !== undefined) {
      this.#young.delete(key);
      this.#youngWeight -= this.#weightOf(young);
      return;
    }
    const old = this.#old.get(key);
    if (old === undefined) return;
    this.#old.delete(key);
    this.#oldWeight -= this.#weightOf(old);
  }

  /** Forgets everything, telling `onDrop` nothing. */
  clear(): void {
    this.#young = new Map();
    this.#old = new Map();
    this.#youngWeight = 0;
    this.#oldWeight = 0;
  }

  #putYoung(key: K, value: V): void {
    const weight = this.#weightOf(value);
    if (this.#youngWeight + weight > this.#generationWeight && this.#youngWeight > 0) {
      const onDrop = this.#onDrop;
      const dropped = this.#keepsOld ? this.#old : this.#young;
      if (onDrop !== undefined) for (const old of dropped.values()) onDrop(old);
      if (this.#keepsOld) {
        this.#old = this.#young;
        this.#oldWeight = this.#youngWeight;
      } else {
        this.#old = new Map();
        this.#oldWeight = 0;
      }
      this.#young = new Map();
      this.#youngWeight = 0;
    }
    this.#young.set(key, value);
    this.#youngWeight += weight;
  }
}
