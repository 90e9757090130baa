/**
 * The traffic record's wire and storage format: one batch of recorded requests, columnar and
 * compact (about 18 bytes a request plus each distinct subject and request profile once).
 *
 *   u32 header length | header JSON (UTF-8) | columns, each `count` long, in this order:
 *   f64 timeMs | u32 subject index | u32 profile index | u16 order | u8 flags | u8 binding
 *
 * - `timeMs`: the time the store decided at (Redis `TIME` as the script used it, exact), or the
 *   gateway's wall clock for a decision the store did not make (flag `hasStoreTime` clear).
 * - `order`: the decision's index within its script call (decisions of one call share a time).
 * - `subject`: `c:<customer id>` or `h:<keyed hash of the client address>`.
 * - `profile`: what else the request was: tier asked for, endpoint class, cost, policy version
 *   and the scopes checked (few distinct ones, so each is stored once per batch).
 * - `binding`: the index in the profile's scopes of the binding scope, 255 for none.
 *
 * Pure: no I/O, no `node:*` (DataView and TextEncoder only), so the control plane decodes what
 * enforcers encode with the same code.
 */

/** Current format. A batch of another version is refused, never misread. */
export const TRAFFIC_BATCH_FORMAT = 1;

export const FLAG_ALLOWED = 1;
/** The time is the store's (Redis TIME); clear: the gateway's wall clock. */
export const FLAG_STORE_TIME = 2;
/** Decided without Redis (failure policy): excluded from fidelity. */
export const FLAG_WITHOUT_STORE = 4;
/** Rejected by the gateway's local stage (denial cache, flood guard) without asking Redis. */
export const FLAG_LOCAL_STAGE = 8;
/** No policy was in force: admitted unchecked. */
export const FLAG_NO_POLICY = 16;

export const NO_BINDING = 255;

/** One request profile: all but the subject, time, order and outcome. */
export interface TrafficProfile {
  readonly tier: string | null;
  readonly endpointClass: string | null;
  readonly cost: number;
  readonly policyVersion: number | null;
  readonly scopes: readonly string[];
}

/** A decoded batch, columnar. */
export interface TrafficBatch {
  readonly format: number;
  readonly gatewayId: string;
  /** Fraction of subjects recorded (1: every request). */
  readonly sampleRate: number;
  /** Requests the recorder could not keep (its buffer was full): a gap in the record. */
  readonly dropped: number;
  readonly count: number;
  readonly subjects: readonly string[];
  readonly profiles: readonly TrafficProfile[];
  readonly timeMs: Float64Array;
  readonly subject: Uint32Array;
  readonly profile: Uint32Array;
  readonly order: Uint16Array;
  readonly flags: Uint8Array;
  readonly binding: Uint8Array;
}

interface BatchHeader {
  readonly v: number;
  readonly g: string;
  readonly r: number;
  readonly d: number;
  readonly n: number;
  readonly s: readonly string[];
  /** [tier, endpointClass, cost, policyVersion, scopes] */
  readonly p: readonly (readonly [string | null, string | null, number, number | null, string[]])[];
}

const BYTES_PER_ENTRY = 8 + 4 + 4 + 2 + 1 + 1;

/** Whether typed arrays are little-endian here (the format's byte order): then decode copies once. */
const IS_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Encodes `batch` (its typed arrays may be longer than `count`; only `count` are written). */
export function encodeTrafficBatch(batch: Omit<TrafficBatch, "format">): Uint8Array {
  const header: BatchHeader = {
    v: TRAFFIC_BATCH_FORMAT,
    g: batch.gatewayId,
    r: batch.sampleRate,
    d: batch.dropped,
    n: batch.count,
    s: batch.subjects,
    p: batch.profiles.map((p) => [p.tier, p.endpointClass, p.cost, p.policyVersion, [...p.scopes]]),
  };
  const headerBytes = new TextEncoder().encode(JSON.stringify(header));
  // Pad the header so the f64 column is 8-byte aligned (typed-array views on decode).
  const headerLength = Math.ceil((4 + headerBytes.length) / 8) * 8 - 4;
  const n = batch.count;
  const out = new Uint8Array(4 + headerLength + n * BYTES_PER_ENTRY);
  const view = new DataView(out.buffer);
  view.setUint32(0, headerLength, true);
  out.set(headerBytes, 4);
  out.fill(0x20, 4 + headerBytes.length, 4 + headerLength);
  let at = 4 + headerLength;
  if (IS_LITTLE_ENDIAN) {
    out.set(new Uint8Array(batch.timeMs.buffer, batch.timeMs.byteOffset, n * 8), at);
    out.set(new Uint8Array(batch.subject.buffer, batch.subject.byteOffset, n * 4), at + n * 8);
    out.set(new Uint8Array(batch.profile.buffer, batch.profile.byteOffset, n * 4), at + n * 12);
    out.set(new Uint8Array(batch.order.buffer, batch.order.byteOffset, n * 2), at + n * 16);
    at += n * 18;
  } else {
    for (let i = 0; i < n; i++, at += 8) view.setFloat64(at, batch.timeMs[i] ?? 0, true);
    for (let i = 0; i < n; i++, at += 4) view.setUint32(at, batch.subject[i] ?? 0, true);
    for (let i = 0; i < n; i++, at += 4) view.setUint32(at, batch.profile[i] ?? 0, true);
    for (let i = 0; i < n; i++, at += 2) view.setUint16(at, batch.order[i] ?? 0, true);
  }
  out.set(batch.flags.subarray(0, n), at);
  at += n;
  out.set(batch.binding.subarray(0, n), at);
  return out;
}

/**
 * Decodes a batch; throws a RangeError naming what is wrong with a malformed one. The columns may
 * be views of `bytes` (when aligned): do not reuse `bytes` while the batch is in use.
 */
export function decodeTrafficBatch(bytes: Uint8Array): TrafficBatch {
  if (bytes.length < 4) throw new RangeError("traffic batch: shorter than its header length");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = view.getUint32(0, true);
  if (4 + headerLength > bytes.length) throw new RangeError("traffic batch: header overruns");
  const header = parseHeader(new TextDecoder().decode(bytes.subarray(4, 4 + headerLength)));
  const n = header.n;
  if (bytes.length !== 4 + headerLength + n * BYTES_PER_ENTRY) {
    throw new RangeError(`traffic batch: ${bytes.length} bytes do not hold ${n} entries`);
  }
  let at = 4 + headerLength;
  let timeMs: Float64Array;
  let subject: Uint32Array;
  let profile: Uint32Array;
  let order: Uint16Array;
  let flags: Uint8Array;
  let binding: Uint8Array;
  if (IS_LITTLE_ENDIAN && (bytes.byteOffset + at) % 8 === 0) {
    // Aligned (the header pads to 8 bytes; a freshly inflated buffer starts aligned): typed
    // views of the columns in `bytes` itself, no copy.
    const base = bytes.byteOffset + at;
    timeMs = new Float64Array(bytes.buffer, base, n);
    subject = new Uint32Array(bytes.buffer, base + n * 8, n);
    profile = new Uint32Array(bytes.buffer, base + n * 12, n);
    order = new Uint16Array(bytes.buffer, base + n * 16, n);
    flags = bytes.subarray(at + n * 18, at + n * 19);
    binding = bytes.subarray(at + n * 19, at + n * 20);
  } else {
    if (IS_LITTLE_ENDIAN) {
      // One aligned copy, then typed views of the columns: a fresh buffer (a Node Buffer's slice
      // is a view into a shared pool, rarely aligned).
      const copy = new Uint8Array(bytes.length - at);
      copy.set(bytes.subarray(at));
      timeMs = new Float64Array(copy.buffer, 0, n);
      subject = new Uint32Array(copy.buffer, n * 8, n);
      profile = new Uint32Array(copy.buffer, n * 12, n);
      order = new Uint16Array(copy.buffer, n * 16, n);
      at += n * 18;
    } else {
      timeMs = new Float64Array(n);
      for (let i = 0; i < n; i++, at += 8) timeMs[i] = view.getFloat64(at, true);
      subject = new Uint32Array(n);
      for (let i = 0; i < n; i++, at += 4) subject[i] = view.getUint32(at, true);
      profile = new Uint32Array(n);
      for (let i = 0; i < n; i++, at += 4) profile[i] = view.getUint32(at, true);
      order = new Uint16Array(n);
      for (let i = 0; i < n; i++, at += 2) order[i] = view.getUint16(at, true);
    }
    flags = new Uint8Array(n);
    flags.set(bytes.subarray(at, at + n));
    at += n;
    binding = new Uint8Array(n);
    binding.set(bytes.subarray(at, at + n));
  }
  const subjectCount = header.s.length;
  const profileCount = header.p.length;
  for (let i = 0; i < n; i++) {
    if ((subject[i] as number) >= subjectCount || (profile[i] as number) >= profileCount) {
      throw new RangeError(`traffic batch: entry ${i} refers past the dictionaries`);
    }
  }
  return {
    format: header.v,
    gatewayId: header.g,
    sampleRate: header.r,
    dropped: header.d,
    count: n,
    subjects: header.s,
    profiles: header.p.map(([tier, endpointClass, cost, policyVersion, scopes]) => ({
      tier,
      endpointClass,
      cost,
      policyVersion,
      scopes,
    })),
    timeMs,
    subject,
    profile,
    order,
    flags,
    binding,
  };
}

function parseHeader(text: string): BatchHeader {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new RangeError("traffic batch: header is not JSON");
  }
  const h = value as Partial<BatchHeader> | null;
  if (h === null || typeof h !== "object") throw new RangeError("traffic batch: header");
  if (h.v !== TRAFFIC_BATCH_FORMAT) {
    throw new RangeError(
      `traffic batch: format ${String(h.v)}, this build reads ${TRAFFIC_BATCH_FORMAT}`,
    );
  }
  if (
    typeof h.g !== "string" ||
    typeof h.r !== "number" ||
    !(h.r > 0 && h.r <= 1) ||
    typeof h.d !== "number" ||
    !Number.isInteger(h.n) ||
    (h.n ?? -1) < 0 ||
    !Array.isArray(h.s) ||
    !h.s.every((s) => typeof s === "string") ||
    !Array.isArray(h.p) ||
    !h.p.every(
      (p) =>
        Array.isArray(p) &&
        p.length === 5 &&
        (p[0] === null || typeof p[0] === "string") &&
        (p[1] === null || typeof p[1] === "string") &&
        typeof p[2] === "number" &&
        (p[3] === null || typeof p[3] === "number") &&
        Array.isArray(p[4]) &&
        p[4].every((scope) => typeof scope === "string"),
    )
  ) {
    throw new RangeError("traffic batch: malformed header");
  }
  return h as BatchHeader;
}
