/**
 * A map with a maximum size that evicts the least recently used entry, in O(1) per operation:
 * a `Map` from key to node plus an intrusive doubly linked recency list. The `Map` is never
 * iterated, because a `Map` used as its own LRU (evicting with `map.keys().next()`) walks over the
 * holes deletions leave at the front of its table and costs tens of microseconds per operation
 * under a flood of unique keys (measured when this was written; `lru.test.ts` tests the bound
 * under such a flood, not its speed).
 */

interface LruNode<K, V> {
  readonly key: K;
  value: V;
  newer: LruNode<K, V> | null;
  older: LruNode<K, V> | null;
}

export class BoundedLru<K, V> {
  readonly #maxEntries: number;
  readonly #nodes = new Map<K, LruNode<K, V>>();
  #newest: LruNode<K, V> | null = null;
  #oldest: LruNode<K, V> | null = null;

  constructor(maxEntries: number) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1) {
      throw new RangeError(`maxEntries must be a whole number >= 1, got ${maxEntries}`);
    }
    this.#maxEntries = maxEntries;
  }

  get size(): number {
    return this.#nodes.size;
  }

  get maxEntries(): number {
    return this.#maxEntries;
  }

  /** The value, marking it most recently used. */
  get(key: K): V | undefined {
    const node = this.#nodes.get(key);
    if (node === undefined) return undefined;
    this.#moveToNewest(node);
    return node.value;
  }

  /** The value, without touching its recency. */
  peek(key: K): V | undefined {
    return this.#nodes.get(key)?.value;
  }

  /** Sets the value as most recently used; returns the key evicted to make room, if any. */
  set(key: K, value: V): { readonly key: K; readonly value: V } | null {
    const existing = this.#nodes.get(key);
    if (existing !== undefined) {
      existing.value = value;
      this.#moveToNewest(existing);
      return null;
    }
    let evicted: { key: K; value: V } | null = null;
    if (this.#nodes.size >= this.#maxEntries && this.#oldest !== null) {
      const oldest = this.#oldest;
      this.#unlink(oldest);
      this.#nodes.delete(oldest.key);
      evicted = { key: oldest.key, value: oldest.value };
    }
    const node: LruNode<K, V> = { key, value, newer: null, older: null };
    this.#nodes.set(key, node);
    this.#linkNewest(node);
    return evicted;
  }

  delete(key: K): boolean {
    const node = this.#nodes.get(key);
    if (node === undefined) return false;
    this.#unlink(node);
    this.#nodes.delete(key);
    return true;
  }

  /** The least recently used entry, without touching its recency; undefined when empty. */
  oldest(): [K, V] | undefined {
    const node = this.#oldest;
    return node === null ? undefined : [node.key, node.value];
  }

  /** Forgets every entry. */
  clear(): void {
    this.#nodes.clear();
    this.#newest = null;
    this.#oldest = null;
  }

  /** Entries from least to most recently used. Walks the list; for tests and small snapshots. */
  *entries(): IterableIterator<[K, V]> {
    for (let node = this.#oldest; node !== null; node = node.newer) yield [node.key, node.value];
  }

  #moveToNewest(node: LruNode<K, V>): void {
    if (node === this.#newest) return;
    this.#unlink(node);
    this.#linkNewest(node);
  }

  #linkNewest(node: LruNode<K, V>): void {
    node.older = this.#newest;
    node.newer = null;
    if (this.#newest === null) this.#oldest = node;
    else this.#newest.newer = node;
    this.#newest = node;
  }

  #unlink(node: LruNode<K, V>): void {
    if (node.newer === null) this.#newest = node.older;
    else node.newer.older = node.older;
    if (node.older === null) this.#oldest = node.newer;
    else node.older.newer = node.newer;
    node.newer = null;
    node.older = null;
  }
}
