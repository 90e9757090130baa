/**
 * The columns of traffic being put together, with its subject and profile dictionaries: what the
 * recorder fills one decision at a time, what `mergeTrafficBatches` (here) fills from parts, and
 * what the backtest fills from the batches of a span (`lib/control/backtest/load-traffic-window.ts`).
 * Columns are typed arrays that grow by doubling (a recorder sizes them once, to its buffer);
 * `clear` keeps them for the next batch. Pure.
 */
import {
  TRAFFIC_BATCH_FORMAT,
  type TrafficBatch,
  type TrafficProfile,
} from "./traffic-batch-codec";

export class TrafficBatchBuilder {
  count = 0;
  timeMs: Float64Array;
  subject: Uint32Array;
  profile: Uint32Array;
  order: Uint16Array;
  flags: Uint8Array;
  binding: Uint8Array;
  subjects: string[] = [];
  profiles: TrafficProfile[] = [];
  #subjectIndex = new Map<string, number>();
  #profileIndex = new Map<string, number>();

  constructor(capacity: number) {
    const size = Math.max(1, capacity);
    this.timeMs = new Float64Array(size);
    this.subject = new Uint32Array(size);
    this.profile = new Uint32Array(size);
    this.order = new Uint16Array(size);
    this.flags = new Uint8Array(size);
    this.binding = new Uint8Array(size);
  }

  /** The dictionary index of `name`, added if new. */
  subjectIdOf(name: string): number {
    let id = this.#subjectIndex.get(name);
    if (id === undefined) {
      id = this.subjects.length;
      this.subjects.push(name);
      this.#subjectIndex.set(name, id);
    }
    return id;
  }

  /** The dictionary index of the profile `key` names; `make` builds it the first time. */
  profileIdOf(key: string, make: () => TrafficProfile): number {
    let id = this.#profileIndex.get(key);
    if (id === undefined) {
      id = this.profiles.length;
      this.profiles.push(make());
      this.#profileIndex.set(key, id);
    }
    return id;
  }

  /** One request (dictionary indices from `subjectIdOf` and `profileIdOf`). */
  append(
    timeMs: number,
    subject: number,
    profile: number,
    order: number,
    flags: number,
    binding: number,
  ): void {
    const at = this.count;
    if (at === this.timeMs.length) this.#grow(at * 2);
    this.timeMs[at] = timeMs;
    this.subject[at] = subject;
    this.profile[at] = profile;
    this.order[at] = order;
    this.flags[at] = flags;
    this.binding[at] = binding;
    this.count = at + 1;
  }

  /**
   * Appends the requests `[from, to)` of `batch` whose time is in `[fromMs, toMs)`, in the
   * batch's order, its subjects and profiles added to this builder's dictionaries as they are
   * used. Returns how many were appended. A batch wholly in the span is copied column by column.
   */
  appendBatch(
    batch: TrafficBatch,
    range: {
      readonly from?: number;
      readonly to?: number;
      readonly fromMs?: number;
      readonly toMs?: number;
    } = {},
  ): number {
    const from = range.from ?? 0;
    const to = range.to ?? batch.count;
    const fromMs = range.fromMs ?? Number.NEGATIVE_INFINITY;
    const toMs = range.toMs ?? Number.POSITIVE_INFINITY;
    const subjectMap = new Int32Array(batch.subjects.length).fill(-1);
    const profileMap = new Int32Array(batch.profiles.length).fill(-1);
    const subjectOf = (s: number): number => {
      let id = subjectMap[s] as number;
      if (id === -1) {
        id = this.subjectIdOf(batch.subjects[s] ?? "");
        subjectMap[s] = id;
      }
      return id;
    };
    const profileOf = (p: number): number => {
      let id = profileMap[p] as number;
      if (id === -1) {
        const value = batch.profiles[p] as TrafficProfile;
        id = this.profileIdOf(trafficProfileKey(value), () => value);
        profileMap[p] = id;
      }
      return id;
    };
    const times = batch.timeMs;
    let isWhole = true;
    for (let i = from; i < to && isWhole; i++) {
      const t = times[i] as number;
      isWhole = t >= fromMs && t < toMs;
    }
    this.#ensure(to - from);
    const at = this.count;
    if (isWhole) {
      this.timeMs.set(times.subarray(from, to), at);
      this.order.set(batch.order.subarray(from, to), at);
      this.flags.set(batch.flags.subarray(from, to), at);
      this.binding.set(batch.binding.subarray(from, to), at);
      for (let i = from; i < to; i++) {
        this.subject[at + i - from] = subjectOf(batch.subject[i] as number);
        this.profile[at + i - from] = profileOf(batch.profile[i] as number);
      }
      this.count = at + to - from;
      return to - from;
    }
    let n = at;
    for (let i = from; i < to; i++) {
      const t = times[i] as number;
      if (t < fromMs || t >= toMs) continue;
      this.timeMs[n] = t;
      this.subject[n] = subjectOf(batch.subject[i] as number);
      this.profile[n] = profileOf(batch.profile[i] as number);
      this.order[n] = batch.order[i] as number;
      this.flags[n] = batch.flags[i] as number;
      this.binding[n] = batch.binding[i] as number;
      n++;
    }
    this.count = n;
    return n - at;
  }

  /**
   * The batch so far: columns are views of this builder's (valid until it is written to again),
   * the dictionaries are handed over (a `clear` starts new ones).
   */
  batch(meta: {
    readonly gatewayId: string;
    readonly sampleRate: number;
    readonly dropped: number;
  }): Omit<TrafficBatch, "format"> {
    const n = this.count;
    return {
      ...meta,
      count: n,
      subjects: this.subjects,
      profiles: this.profiles,
      timeMs: this.timeMs.subarray(0, n),
      subject: this.subject.subarray(0, n),
      profile: this.profile.subarray(0, n),
      order: this.order.subarray(0, n),
      flags: this.flags.subarray(0, n),
      binding: this.binding.subarray(0, n),
    };
  }

  /** Empty again: no requests, new dictionaries, the columns kept. */
  clear(): void {
    this.count = 0;
    this.subjects = [];
    this.profiles = [];
    this.#subjectIndex = new Map();
    this.#profileIndex = new Map();
  }

  /** Room for `more` requests: doubled, or to what is needed if that is more. */
  #ensure(more: number): void {
    const needed = this.count + more;
    if (needed > this.timeMs.length) this.#grow(Math.max(needed, this.timeMs.length * 2));
  }

  #grow(capacity: number): void {
    const n = this.count;
    const timeMs = new Float64Array(capacity);
    timeMs.set(this.timeMs.subarray(0, n));
    this.timeMs = timeMs;
    const subject = new Uint32Array(capacity);
    subject.set(this.subject.subarray(0, n));
    this.subject = subject;
    const profile = new Uint32Array(capacity);
    profile.set(this.profile.subarray(0, n));
    this.profile = profile;
    const order = new Uint16Array(capacity);
    order.set(this.order.subarray(0, n));
    this.order = order;
    const flags = new Uint8Array(capacity);
    flags.set(this.flags.subarray(0, n));
    this.flags = flags;
    const binding = new Uint8Array(capacity);
    binding.set(this.binding.subarray(0, n));
    this.binding = binding;
  }
}

/** The dictionary key of a profile: equal keys, equal profiles. */
export function trafficProfileKey(profile: TrafficProfile): string {
  return `${profile.tier}\u0001${profile.endpointClass}\u0001${profile.cost}\u0001${profile.policyVersion}\u0001${profile.scopes.join("\u0000")}`;
}

/**
 * One batch of the entries `[from, to)` of each of `parts` (in the order given), with merged
 * dictionaries. Every part must come from one gateway at one sample rate.
 */
export function mergeTrafficBatches(
  parts: readonly { readonly batch: TrafficBatch; readonly from: number; readonly to: number }[],
  dropped: number,
): TrafficBatch {
  const first = parts[0]?.batch;
  if (first === undefined) throw new RangeError("mergeTrafficBatches: nothing to merge");
  let n = 0;
  for (const part of parts) {
    if (part.batch.gatewayId !== first.gatewayId || part.batch.sampleRate !== first.sampleRate) {
      throw new RangeError("mergeTrafficBatches: parts of different gateways or sample rates");
    }
    n += part.to - part.from;
  }
  const builder = new TrafficBatchBuilder(n);
  for (const { batch, from, to } of parts) builder.appendBatch(batch, { from, to });
  return {
    format: TRAFFIC_BATCH_FORMAT,
    ...builder.batch({ gatewayId: first.gatewayId, sampleRate: first.sampleRate, dropped }),
  };
}
