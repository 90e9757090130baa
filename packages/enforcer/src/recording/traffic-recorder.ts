/**
 * The traffic record, enforcer side: the decision path hands each decision over as a plain
 * object ({@link DecisionRecord}) and it is appended to a bounded in-memory buffer, nothing else
 * (no I/O, no hashing, no await). A timer ({@link TrafficRecorder.flush}) takes the buffer,
 * hashes client addresses with a keyed hash (HMAC-SHA256 with the installation's secret), encodes
 * one compact batch (`traffic-batch-codec.ts`) and appends it to this gateway's Redis Stream,
 * bounded by MAXLEN. The worker moves the batches into Postgres.
 *
 * Sampling is by subject (a customer, or a hashed address), never by request: a sampled subject
 * has every one of its requests recorded, so its buckets replay exactly; the rate travels with
 * every batch so estimates scale by 1 / rate. A full buffer drops requests and counts them: the
 * batch says how many, and the backtest reports it as a gap.
 */
import { hmac } from "@noble/hashes/hmac.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import { storeTimeOf } from "../limiter/stores/store-time";
import {
  encodeTrafficBatch,
  FLAG_ALLOWED,
  FLAG_LOCAL_STAGE,
  FLAG_STORE_TIME,
  FLAG_WITHOUT_STORE,
  NO_BINDING,
  type TrafficProfile,
} from "./traffic-batch-codec";

/** One decision as the decision path hands it over: references only, nothing computed. */
export interface DecisionRecord {
  /** Whose buckets were used: `c:<customer>`, `a:<address>`, `a:<address>/endpoint:E`. */
  readonly subject: string;
  /** The tier the gateway asked for (null: the default tier). */
  readonly tier: string | null;
  readonly endpointClass: string;
  readonly cost: number;
  readonly policyVersion: number;
  /** The checks resolved for the request (scopes, in order). */
  readonly checks: readonly { readonly scope: string }[];
  readonly decision: {
    readonly allowed: boolean;
    readonly scope: string | null;
    readonly source: string;
    readonly degraded: boolean;
  };
  /** The gateway's wall clock, used only when the store gave no time. */
  readonly wallTimeMs: number;
}

/** What the decision engine calls once per decision. */
export interface DecisionRecorder {
  record(record: DecisionRecord): void;
}

/** The Redis commands the recorder sends (an ioredis `Redis` or `Cluster` satisfies it). */
export interface TrafficRecordingRedis {
  xadd(key: string, ...args: (string | Buffer | number)[]): Promise<unknown>;
  sadd(key: string, ...members: string[]): Promise<unknown>;
  pexpire(key: string, ms: number): Promise<unknown>;
}

export interface TrafficRecordingOptions {
  /**
   * The key of the address hash: the installation's `TRAFFIC_RECORD_SECRET`, at least 16
   * characters. Client addresses never leave the gateway unhashed.
   */
  readonly addressHashKey: string;
  /**
   * Fraction of subjects recorded, in (0, 1]. Lower it for high volume: cost and Redis traffic
   * fall in proportion, and the backtest scales its counts by 1 / rate.
   * @default 1
   */
  readonly sampleRate?: number;
  /** Decisions held between flushes; beyond it they are dropped and counted. @default 100_000 */
  readonly maxBufferedDecisions?: number;
  /** @default 1_000 */
  readonly flushIntervalMs?: number;
  /** MAXLEN (approximate) of the gateway's stream, in batches. @default 3_600 (1 h of 1 s batches) */
  readonly maxStreamBatches?: number;
  /** The stream outlives its last write by this long. @default 21_600_000 (6 h) */
  readonly streamTtlMs?: number;
}

/** The Redis names of the record. */
export function trafficRecordNames(prefix: string): {
  readonly gateways: string;
  readonly stream: (gatewayId: string) => string;
} {
  return {
    gateways: `${prefix}traffic:gateways`,
    stream: (gatewayId) => `${prefix}traffic:{${gatewayId}}`,
  };
}

/** The stored form of a subject: customers as they are, addresses by keyed hash. */
export function recordedSubjectOf(subject: string, hashAddress: (address: string) => string) {
  if (subject.startsWith("c:")) return subject;
  const rest = subject.startsWith("a:") ? subject.slice(2) : subject;
  const marker = rest.lastIndexOf("/endpoint:");
  return `h:${hashAddress(marker === -1 ? rest : rest.slice(0, marker))}`;
}

/** 32-bit FNV-1a with a final mix, for picking sampled subjects (not security: the subjects are the gateway's). */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  // FNV-1a's high bits barely move with the last characters (`smp-01`, `smp-02`): finish with
  // MurmurHash3's mixer so the threshold on them picks a fair share.
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}

/**
 * Whether a subject is in the record at `sampleRate`: by a hash of the subject without its route
 * suffix, so one customer or address is recorded whole or not at all, and a lower rate keeps a
 * subset of the subjects a higher one keeps.
 */
export function isSampledSubject(subject: string, sampleRate: number): boolean {
  if (sampleRate >= 1) return true;
  const marker = subject.lastIndexOf("/endpoint:");
  return fnv1a(marker === -1 ? subject : subject.slice(0, marker)) < sampleRate * 2 ** 32;
}

export class TrafficRecorder implements DecisionRecorder {
  readonly sampleRate: number;
  readonly flushIntervalMs: number;
  readonly #gatewayId: string;
  readonly #redis: TrafficRecordingRedis;
  readonly #names: ReturnType<typeof trafficRecordNames>;
  readonly #max: number;
  readonly #maxStreamBatches: number;
  readonly #streamTtlMs: number;
  readonly #key: Uint8Array;
  #buffer: DecisionRecord[] = [];
  #dropped = 0;
  readonly #hashes = new Map<string, string>();
  /** Batches written and requests in them, since start. */
  written = { batches: 0, requests: 0, bytes: 0 };

  constructor(
    options: TrafficRecordingOptions & {
      readonly gatewayId: string;
      readonly redis: TrafficRecordingRedis;
      readonly prefix: string;
    },
  ) {
    if (typeof options.addressHashKey !== "string" || options.addressHashKey.length < 16) {
      throw new RangeError("recording.addressHashKey must be a secret of at least 16 characters");
    }
    const rate = options.sampleRate ?? 1;
    if (!(rate > 0 && rate <= 1)) {
      throw new RangeError(`recording.sampleRate must be more than 0 and at most 1, got ${rate}`);
    }
    const max = options.maxBufferedDecisions ?? 100_000;
    if (!Number.isInteger(max) || max < 1) {
      throw new RangeError(
        `recording.maxBufferedDecisions must be a whole number >= 1, got ${max}`,
      );
    }
    this.sampleRate = rate;
    this.flushIntervalMs = options.flushIntervalMs ?? 1_000;
    this.#gatewayId = options.gatewayId;
    this.#redis = options.redis;
    this.#names = trafficRecordNames(options.prefix);
    this.#max = max;
    this.#maxStreamBatches = options.maxStreamBatches ?? 3_600;
    this.#streamTtlMs = options.streamTtlMs ?? 21_600_000;
    this.#key = utf8ToBytes(options.addressHashKey);
  }

  /** The decision path's call: append, or count as dropped when the buffer is full. */
  record(record: DecisionRecord): void {
    if (this.sampleRate < 1 && !isSampledSubject(record.subject, this.sampleRate)) return;
    if (this.#buffer.length >= this.#max) {
      this.#dropped++;
      return;
    }
    this.#buffer.push(record);
  }

  /** The keyed hash of an address: 16 bytes of HMAC-SHA256, hex. */
  hashAddress(address: string): string {
    let hash = this.#hashes.get(address);
    if (hash === undefined) {
      hash = bytesToHex(hmac(sha256, this.#key, utf8ToBytes(address)).subarray(0, 16));
      if (this.#hashes.size >= 50_000) this.#hashes.clear();
      this.#hashes.set(address, hash);
    }
    return hash;
  }

  /** Takes what is buffered and writes it as one batch; off the decision path (a timer). */
  async flush(): Promise<void> {
    const records = this.#buffer;
    const dropped = this.#dropped;
    if (records.length === 0 && dropped === 0) return;
    this.#buffer = [];
    this.#dropped = 0;
    const payload = this.encode(records, dropped);
    const stream = this.#names.stream(this.#gatewayId);
    await this.#redis.xadd(
      stream,
      "MAXLEN",
      "~",
      String(this.#maxStreamBatches),
      "*",
      "b",
      Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength),
    );
    await this.#redis.pexpire(stream, this.#streamTtlMs);
    await this.#redis.sadd(this.#names.gateways, this.#gatewayId);
    this.written = {
      batches: this.written.batches + 1,
      requests: this.written.requests + records.length,
      bytes: this.written.bytes + payload.byteLength,
    };
  }

  /** One batch of `records` (exposed for tests and the bench). */
  encode(records: readonly DecisionRecord[], dropped: number): Uint8Array {
    const n = records.length;
    const timeMs = new Float64Array(n);
    const subject = new Uint32Array(n);
    const profile = new Uint32Array(n);
    const order = new Uint16Array(n);
    const flags = new Uint8Array(n);
    const binding = new Uint8Array(n);
    const subjects: string[] = [];
    const subjectIndex = new Map<string, number>();
    const profiles: TrafficProfile[] = [];
    const profileIndex = new Map<string, number>();
    const scopesKey = new WeakMap<object, string>();
    const hash = (address: string) => this.hashAddress(address);
    for (let i = 0; i < n; i++) {
      const record = records[i] as DecisionRecord;
      const stored = recordedSubjectOf(record.subject, hash);
      let s = subjectIndex.get(stored);
      if (s === undefined) {
        s = subjects.length;
        subjects.push(stored);
        subjectIndex.set(stored, s);
      }
      let scopes = scopesKey.get(record.checks);
      if (scopes === undefined) {
        scopes = record.checks.map((check) => check.scope).join("\u0000");
        scopesKey.set(record.checks, scopes);
      }
      const key = `${record.tier}\u0001${record.endpointClass}\u0001${record.cost}\u0001${record.policyVersion}\u0001${scopes}`;
      let p = profileIndex.get(key);
      if (p === undefined) {
        p = profiles.length;
        profiles.push({
          tier: record.tier,
          endpointClass: record.endpointClass,
          cost: record.cost,
          policyVersion: record.policyVersion,
          scopes: record.checks.map((check) => check.scope),
        });
        profileIndex.set(key, p);
      }
      const decision = record.decision;
      const storeTime = storeTimeOf(decision);
      timeMs[i] = storeTime === undefined ? record.wallTimeMs : storeTime.nowMs;
      order[i] = storeTime === undefined ? 0 : storeTime.indexInCall;
      subject[i] = s;
      profile[i] = p;
      flags[i] =
        (decision.allowed ? FLAG_ALLOWED : 0) |
        (storeTime === undefined ? 0 : FLAG_STORE_TIME) |
        (decision.degraded ? FLAG_WITHOUT_STORE : 0) |
        (decision.source === "denial-cache" || decision.source === "flood-guard"
          ? FLAG_LOCAL_STAGE
          : 0);
      const bound =
        decision.scope === null ? -1 : record.checks.findIndex((c) => c.scope === decision.scope);
      binding[i] = bound === -1 || bound > 254 ? NO_BINDING : bound;
    }
    return encodeTrafficBatch({
      gatewayId: this.#gatewayId,
      sampleRate: this.sampleRate,
      dropped,
      count: n,
      subjects,
      profiles,
      timeMs,
      subject,
      profile,
      order,
      flags,
      binding,
    });
  }
}
