/**
 * The traffic record, enforcer side: the decision path hands each decision over
 * ({@link DecisionRecord}) and its fields are appended to bounded typed-array columns, nothing
 * else: no object is kept, no I/O, no hashing, no await (the subject and the profile become small
 * dictionary indices; the last few profiles are recognised by identity, without building a key).
 * A timer ({@link TrafficRecorder.flush}) takes the columns, hashes client addresses with a keyed
 * hash (HMAC-SHA256 with the installation's secret, cached per address), encodes one compact
 * batch (`traffic-batch-codec.ts`) and appends it to this gateway's Redis Stream, bounded by
 * MAXLEN. The worker moves the batches into Postgres.
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
import { TrafficBatchBuilder, trafficProfileKey } from "./traffic-batch-builder";
import {
  encodeTrafficBatch,
  FLAG_ALLOWED,
  FLAG_LOCAL_STAGE,
  FLAG_STORE_TIME,
  FLAG_WITHOUT_STORE,
  NO_BINDING,
  type TrafficProfile,
} from "./traffic-batch-codec";

/** A profile recently appended, recognised by the identity of its checks and its fields. */
interface RecentProfile {
  readonly checks: readonly { readonly scope: string }[];
  readonly tier: string | null;
  readonly endpointClass: string;
  readonly cost: number;
  readonly policyVersion: number;
  readonly id: number;
}

/** Profiles recognised without a key: a gateway's traffic has few, and they repeat. */
const RECENT_PROFILES = 8;
/** Columns preallocated up to this many decisions; beyond, they grow (to the buffer's bound). */
const PREALLOCATED_DECISIONS = 16_384;

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
  readonly #columns: TrafficBatchBuilder;
  #recent: RecentProfile[] = [];
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
    this.#columns = new TrafficBatchBuilder(Math.min(max, PREALLOCATED_DECISIONS));
  }

  /** The decision path's call: append, or count as dropped when the buffer is full. */
  record(record: DecisionRecord): void {
    if (this.sampleRate < 1 && !isSampledSubject(record.subject, this.sampleRate)) return;
    const columns = this.#columns;
    if (columns.count >= this.#max) {
      this.#dropped++;
      return;
    }
    const decision = record.decision;
    const storeTime = storeTimeOf(decision);
    const checks = record.checks;
    let bound = NO_BINDING;
    if (decision.scope !== null) {
      for (let c = 0; c < checks.length && c < NO_BINDING; c++) {
        if ((checks[c] as { readonly scope: string }).scope === decision.scope) {
          bound = c;
          break;
        }
      }
    }
    columns.append(
      storeTime === undefined ? record.wallTimeMs : storeTime.nowMs,
      // As the decision path named it; the stored form (addresses hashed) is made at flush.
      columns.subjectIdOf(record.subject),
      this.#profileIdOf(record),
      storeTime === undefined ? 0 : storeTime.indexInCall,
      (decision.allowed ? FLAG_ALLOWED : 0) |
        (storeTime === undefined ? 0 : FLAG_STORE_TIME) |
        (decision.degraded ? FLAG_WITHOUT_STORE : 0) |
        (decision.source === "denial-cache" || decision.source === "flood-guard"
          ? FLAG_LOCAL_STAGE
          : 0),
      bound,
    );
  }

  #profileIdOf(record: DecisionRecord): number {
    const recent = this.#recent;
    for (let r = 0; r < recent.length; r++) {
      const seen = recent[r] as RecentProfile;
      if (
        seen.checks === record.checks &&
        seen.tier === record.tier &&
        seen.endpointClass === record.endpointClass &&
        seen.cost === record.cost &&
        seen.policyVersion === record.policyVersion
      ) {
        return seen.id;
      }
    }
    const profile: TrafficProfile = {
      tier: record.tier,
      endpointClass: record.endpointClass,
      cost: record.cost,
      policyVersion: record.policyVersion,
      scopes: record.checks.map((check) => check.scope),
    };
    const id = this.#columns.profileIdOf(trafficProfileKey(profile), () => profile);
    if (recent.length >= RECENT_PROFILES) recent.shift();
    recent.push({
      checks: record.checks,
      tier: record.tier,
      endpointClass: record.endpointClass,
      cost: record.cost,
      policyVersion: record.policyVersion,
      id,
    });
    return id;
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
    const requests = this.#columns.count;
    const dropped = this.#dropped;
    if (requests === 0 && dropped === 0) return;
    const payload = this.#encodeBuffered(dropped);
    this.#columns.clear();
    this.#recent = [];
    this.#dropped = 0;
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
      requests: this.written.requests + requests,
      bytes: this.written.bytes + payload.byteLength,
    };
  }

  /** One batch of what is buffered, subjects in their stored form (one entry per stored name). */
  #encodeBuffered(dropped: number): Uint8Array {
    const columns = this.#columns;
    const names = columns.subjects;
    const stored: string[] = [];
    const storedIndex = new Map<string, number>();
    const remap = new Uint32Array(names.length);
    let isSame = true;
    const hash = (address: string) => this.hashAddress(address);
    for (let s = 0; s < names.length; s++) {
      const name = recordedSubjectOf(names[s] as string, hash);
      let id = storedIndex.get(name);
      if (id === undefined) {
        id = stored.length;
        stored.push(name);
        storedIndex.set(name, id);
      }
      remap[s] = id;
      if (id !== s) isSame = false;
    }
    // Two names for one stored subject (an address with and without a route suffix): one entry.
    if (!isSame) {
      const subject = columns.subject;
      for (let i = 0; i < columns.count; i++) subject[i] = remap[subject[i] as number] as number;
    }
    return encodeTrafficBatch({
      ...columns.batch({ gatewayId: this.#gatewayId, sampleRate: this.sampleRate, dropped }),
      subjects: stored,
    });
  }
}
