/**
 * The time a shared store decided at, and the decision's index within its script call: the
 * traffic record's time and order (Redis runs calls one at a time, and a call's decisions in
 * index order at one `TIME`). Kept beside the decision rather than in it, so a decision's shape is
 * the same from every store (the contract tests compare them whole).
 */
export interface StoreTime {
  /** The `now` the script used: Redis `TIME` in ms (microsecond precision), exactly. */
  readonly nowMs: number;
  /** 0 for the first decision of its call. */
  readonly indexInCall: number;
}

const storeTimes = new WeakMap<object, StoreTime>();

/** Notes when `decision` was made (the Redis store, and whatever converts its decisions). */
export function setStoreTime(decision: object, storeTime: StoreTime): void {
  storeTimes.set(decision, storeTime);
}

/** When the store made `decision`; undefined for decisions no shared store made. */
export function storeTimeOf(decision: object): StoreTime | undefined {
  return storeTimes.get(decision);
}
