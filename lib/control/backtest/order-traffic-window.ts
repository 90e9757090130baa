/**
 * The window's requests grouped by subject, each group in (time, index in call) order: what the
 * replay walks. `groupBySubject` computes the order (a counting sort, then a sort of any group
 * not already in order); `orderTrafficWindow` rewrites the columns in it, so the replay reads
 * them front to back instead of jumping across the whole window for every request.
 */
import type { TrafficProfile } from "@limitplane/enforcer/recording";

/** A loaded window of the record, columnar (see `load-traffic-window.ts`). */
export interface TrafficWindow {
  readonly count: number;
  readonly subjects: readonly string[];
  readonly profiles: readonly TrafficProfile[];
  readonly timeMs: Float64Array;
  readonly subject: Uint32Array;
  readonly profile: Uint32Array;
  readonly order: Uint16Array;
  readonly flags: Uint8Array;
  readonly binding: Uint8Array;
  /** 1 / the sample rate each request was recorded at. */
  readonly weight: Float32Array;
}

/** Per subject, the indices of its requests ordered by (time, index in call). */
export function groupBySubject(window: TrafficWindow): {
  starts: Uint32Array;
  indices: Uint32Array;
} {
  const nSubjects = window.subjects.length;
  const { timeMs, order, subject } = window;
  const starts = new Uint32Array(nSubjects + 1);
  for (let i = 0; i < window.count; i++) {
    const at = (subject[i] as number) + 1;
    starts[at] = (starts[at] as number) + 1;
  }
  for (let s = 0; s < nSubjects; s++)
    starts[s + 1] = (starts[s + 1] as number) + (starts[s] as number);
  const fill = starts.slice(0, nSubjects);
  const indices = new Uint32Array(window.count);
  for (let i = 0; i < window.count; i++) {
    const s = subject[i] as number;
    indices[fill[s] as number] = i;
    fill[s] = (fill[s] as number) + 1;
  }
  for (let s = 0; s < nSubjects; s++) {
    const from = starts[s] as number;
    const to = starts[s + 1] as number;
    let isSorted = true;
    for (let k = from + 1; k < to; k++) {
      const a = indices[k - 1] as number;
      const b = indices[k] as number;
      const ta = timeMs[a] as number;
      const tb = timeMs[b] as number;
      if (ta > tb || (ta === tb && (order[a] as number) > (order[b] as number))) {
        isSorted = false;
        break;
      }
    }
    if (!isSorted) {
      indices
        .subarray(from, to)
        .sort(
          (a, b) =>
            (timeMs[a] as number) - (timeMs[b] as number) ||
            (order[a] as number) - (order[b] as number),
        );
    }
  }
  return { starts, indices };
}

/** The same window with its columns in `groupBySubject` order (subject and profile ids kept). */
export function orderTrafficWindow(window: TrafficWindow): TrafficWindow {
  const { indices } = groupBySubject(window);
  const n = window.count;
  // One loop per column, each over one typed-array type (a loop shared by several types would
  // be polymorphic, and many times slower).
  const timeMs = new Float64Array(n);
  const fromTime = window.timeMs;
  for (let k = 0; k < n; k++) timeMs[k] = fromTime[indices[k] as number] as number;
  const subject = new Uint32Array(n);
  const fromSubject = window.subject;
  for (let k = 0; k < n; k++) subject[k] = fromSubject[indices[k] as number] as number;
  const profile = new Uint32Array(n);
  const fromProfile = window.profile;
  for (let k = 0; k < n; k++) profile[k] = fromProfile[indices[k] as number] as number;
  const order = new Uint16Array(n);
  const fromOrder = window.order;
  for (let k = 0; k < n; k++) order[k] = fromOrder[indices[k] as number] as number;
  const flags = new Uint8Array(n);
  const fromFlags = window.flags;
  for (let k = 0; k < n; k++) flags[k] = fromFlags[indices[k] as number] as number;
  const binding = new Uint8Array(n);
  const fromBinding = window.binding;
  for (let k = 0; k < n; k++) binding[k] = fromBinding[indices[k] as number] as number;
  const weight = new Float32Array(n);
  const fromWeight = window.weight;
  for (let k = 0; k < n; k++) weight[k] = fromWeight[indices[k] as number] as number;
  return {
    count: n,
    subjects: window.subjects,
    profiles: window.profiles,
    timeMs,
    subject,
    profile,
    order,
    flags,
    binding,
    weight,
  };
}
