/**
 * The columns of a traffic batch being put together, with its subject and profile dictionaries:
 * what the recorder fills one decision at a time and what `mergeTrafficBatches` (here) fills from
 * parts.
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
  for (const { batch, from, to } of parts) {
    const subjectMap = new Int32Array(batch.subjects.length).fill(-1);
    const profileMap = new Int32Array(batch.profiles.length).fill(-1);
    for (let i = from; i < to; i++) {
      const s = batch.subject[i] as number;
      let ms = subjectMap[s] as number;
      if (ms === -1) {
        ms = builder.subjectIdOf(batch.subjects[s] ?? "");
        subjectMap[s] = ms;
      }
      const p = batch.profile[i] as number;
      let mp = profileMap[p] as number;
      if (mp === -1) {
        const value = batch.profiles[p] as TrafficProfile;
        mp = builder.profileIdOf(trafficProfileKey(value), () => value);
        profileMap[p] = mp;
      }
      builder.append(
        batch.timeMs[i] as number,
        ms,
        mp,
        batch.order[i] as number,
        batch.flags[i] as number,
        batch.binding[i] as number,
      );
    }
  }
  return {
    format: TRAFFIC_BATCH_FORMAT,
    ...builder.batch({ gatewayId: first.gatewayId, sampleRate: first.sampleRate, dropped }),
  };
}
