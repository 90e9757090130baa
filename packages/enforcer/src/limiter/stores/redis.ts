/// <reference path="./cluster-key-slot.d.ts" />
import calculateSlot from "cluster-key-slot";
import { assertName, assertTimeAndCost, assertValidChecks, assertValidLimit } from "../arguments";
import { type Clock, monotonicClock } from "../clock";
import { combineOutcomes } from "../layered";
import type { ShapedDecision } from "../leaky-shaper";
import { limitSizeOf } from "../step-limit";
import { systemTimers, type TimerHandle, type Timers } from "../timers";
import type {
  DecideInput,
  LayeredDecision,
  LeakyShaperLimit,
  LeasedDecision,
  LeaseReturn,
  LeaseWanted,
  LimitCheck,
  LimiterStore,
  LimitMode,
  LimitOutcome,
  LimitSpec,
  RejectReason,
} from "../types";
import { isNoScript } from "./no-script";
import {
  REDIS_DECIDE_FUNCTION,
  REDIS_DECIDE_LIBRARY,
  REDIS_DECIDE_LUA,
  REDIS_DECIDE_SHA1,
} from "./redis-decide-script";
import { setStoreTime } from "./store-time";
import { StoreUnavailableError } from "./store-unavailable-error";

/**
 * The commands the store sends. An ioredis `Redis` (or `Cluster`) satisfies it; so can a fake in
 * a unit test. The client must have a command timeout and no offline queue, or a dead Redis makes
 * decisions wait: `createRedisClient("decisions", { url })` (the `/publication` entry) is built
 * for this (250 ms, fails at once while disconnected, reconnects by itself). Give it no
 * `keyPrefix` of its own: the store prefixes its keys.
 */
export interface RedisScriptClient {
  /**
   * Any command, its bulk replies as Buffers: the store sends FCALL, EVALSHA and EVAL with it
   * (the script replies with packed bytes).
   */
  callBuffer(command: string, ...args: (string | number)[]): Promise<unknown>;
  /** Any command: the store sends `FUNCTION LOAD REPLACE <library>` with it. */
  call(command: string, ...args: string[]): Promise<unknown>;
  /**
   * True for an ioredis `Cluster`, which routes each call by its keys' hash slot: batches are
   * then made per slot (a script's keys must all live in one slot).
   */
  readonly isCluster?: boolean;
  /**
   * A Cluster's primaries (ioredis `Cluster.nodes("master")`): a function library is loaded on
   * each, since FCALL runs on whichever owns the keys' slot.
   */
  nodes?(role: "master"): readonly Pick<RedisScriptClient, "call">[];
}

/**
 * How the store runs its Lua: `function`, the decide library loaded once per Redis (`FUNCTION
 * LOAD`) and called with FCALL; `eval`, the same code sent as a script (EVALSHA), which makes
 * every helper anew on each call. See `redis-decide-script.ts`.
 */
export type RedisScriptForm = "function" | "eval";

export interface RedisStoreOptions {
  /** The connection decisions go through; see {@link RedisScriptClient}. */
  readonly client: RedisScriptClient;
  /**
   * Prefix of every key, so installations and test runs can share a Redis: in production
   * `loadEnv().REDIS_KEY_PREFIX`. Must not contain `{` or `}`, which would move the hash tag.
   */
  readonly keyPrefix: string;
  /**
   * TESTS ONLY. Where the script's time comes from. Without it the script reads Redis's `TIME`, so
   * every gateway shares one clock and no client's clock matters; with it, the clock's reading is
   * passed in, so tests drive time. Keys then live at least an hour (Redis expires them on its own
   * clock, which has nothing to do with the test's).
   * @default undefined (Redis `TIME`)
   */
  readonly clock?: Clock;
  /**
   * Most decisions sent in one script call. With more than 1, decisions made close together
   * travel together. A batch is one round trip and one script run, its decisions evaluated one
   * after another (each sees what the one before it wrote), atomically as a whole, so no decision
   * admits more than its limit allows. Under load it saves most of the per-call cost in Redis and
   * in the client; 64 suits a busy gateway.
   *
   * When a batch leaves: as soon as it holds as many decisions as are already on their way to
   * Redis (so a decision made while nothing is in flight leaves at once, alone), or
   * `maxBatchSize`, or at the end of the current event-loop turn, whichever comes first. That
   * keeps two batches in flight under load, so Redis runs one while the client reads the other's
   * replies and fills the next, instead of each side waiting for the other (one batch of every
   * decision in flight, sent and answered in turn, leaves one side idle at any moment: measured
   * at 64 in flight, about 30 % fewer decisions a second than two batches of 32).
   *
   * On Redis Cluster (a client whose `isCluster` is true) a script's keys must share one hash
   * slot, so decisions are batched per slot: each batch holds decisions whose subjects hash to
   * the same slot, and the client sends every slot's batch to the node that owns it.
   * @default 1
   */
  readonly maxBatchSize?: number;
  /**
   * `function` (Redis 7.0+) unless the Redis cannot take functions. The store loads its library
   * itself, on the first call that finds it missing (a new, restarted or flushed Redis; on a
   * Cluster, on every primary), and if Redis refuses `FUNCTION LOAD` (an older Redis, or an ACL
   * without it) it goes on with `eval` for good: see {@link RedisStore.scriptForm}.
   * @default "function"
   */
  readonly scriptForm?: RedisScriptForm;
  /**
   * TESTS ONLY. The timer that sends decisions held back (`LeaseWanted.maxDelayMs`) once their
   * delay is up, and the clock the delay is measured on.
   * @default the process's timers (unref'd) and the monotonic clock
   */
  readonly timers?: Timers & Clock;
}

const SYSTEM_TIMERS: Timers & Clock = {
  setTimer: systemTimers.setTimer,
  nowMs: monotonicClock.nowMs,
};

function assertLeaseWanted(lease: LeaseWanted): void {
  if (!(Number.isInteger(lease.units) && lease.units >= 0 && lease.units <= 1e9)) {
    throw new RangeError(`lease.units must be a whole number from 0 to 1e9, got ${lease.units}`);
  }
  if (!(Number.isInteger(lease.lifeMs) && lease.lifeMs >= 0 && lease.lifeMs <= 3_600_000)) {
    throw new RangeError(
      `lease.lifeMs must be a whole number of ms from 0 to 3600000, got ${lease.lifeMs}`,
    );
  }
  const delay = lease.maxDelayMs;
  if (delay !== undefined && !(typeof delay === "number" && delay >= 0 && delay <= 60_000)) {
    throw new RangeError(
      `lease.maxDelayMs must be a number of ms from 0 to 60000, got ${String(delay)}`,
    );
  }
}

function assertLeaseReturn(lease: LeaseReturn): void {
  if (!(Number.isInteger(lease.units) && lease.units >= 0 && lease.units <= 1e9)) {
    throw new RangeError(`lease.units must be a whole number from 0 to 1e9, got ${lease.units}`);
  }
  if (!(Number.isFinite(lease.grantedAtMs) && Math.abs(lease.grantedAtMs) <= 2 ** 52)) {
    throw new RangeError(
      `lease.grantedAtMs must be a finite time in ms within 2^52 of 0, got ${lease.grantedAtMs}`,
    );
  }
  assertLeaseWanted({ units: lease.units, lifeMs: lease.lifeMs, maxDelayMs: lease.maxDelayMs });
}

/** One request to a shaper: it has a single key, and is never part of a layered decision. */
export interface ShapeInput {
  readonly subject: string;
  /** The stored state's name under the subject, as for a check's bucket. */
  readonly bucket: string;
  readonly limit: LeakyShaperLimit;
  /** @default 1 */
  readonly cost?: number;
}

/**
 * Added to every key's lifetime, in ms. A state is only dropped once it is indistinguishable
 * from no state (window over, bucket full); the margin covers the rounding of that lifetime and
 * a modest clock difference between a primary and the replica that replaces it.
 */
const EXPIRY_MARGIN_MS = 1_000;
/** With an injected test clock, Redis's expiry clock is unrelated to the state's time. */
const TEST_CLOCK_EXPIRY_MARGIN_MS = 3_600_000;

/** Reply codes of the script (see `redis-decide-script.ts`), index = code. */
const REASONS: readonly (RejectReason | null)[] = [
  null,
  "limit-exceeded",
  "cost-exceeds-capacity",
  "queue-full",
];

/**
 * Bytes of the reply per check: the code, then remaining, retryAfterMs and resetAfterMs as
 * doubles (`<Bddd`); a shaper adds delayMs; a lease adds its units and lifetime (`<dd`); a call
 * ends with its time (`<d`). See the script's "Reply".
 */
const CHECK_BYTES = 25;
const SHAPE_BYTES = 33;
const LEASE_BYTES = 16;
const RETURN_BYTES = 8;
const TIME_BYTES = 8;

/**
 * The leading argument of a decision at Redis TIME and cost 1, by op and number of checks (up to
 * 16): the same text for nearly every decision, so it is built once.
 */
const HEADS_AT_COST_1: Readonly<Record<"d" | "p" | "s" | "q", readonly string[]>> = {
  d: headsAtCost1("d"),
  p: headsAtCost1("p"),
  s: headsAtCost1("s"),
  q: headsAtCost1("q"),
};

function headsAtCost1(op: string): readonly string[] {
  return Array.from({ length: 17 }, (_, checkCount) => `${op} - 1 ${checkCount}`);
}

/** A decision's share of a script call's reply: where it starts, the call's time, its place. */
interface DecisionReply {
  /** The call's whole reply; this decision's part starts at `offset`. */
  readonly reply: Buffer;
  readonly offset: number;
  /** The call's Redis TIME in whole us; 0 when no decision of the call used it. */
  readonly timeUs: number;
  readonly indexInCall: number;
}

/** One decision's share of a script call: its keys, its arguments, and where its reply goes. */
interface PendingDecision {
  /** The hash slot of its keys on Redis Cluster; 0 on a single Redis. */
  readonly slot: number;
  readonly keys: readonly string[];
  readonly args: readonly string[];
  readonly replyLength: number;
  readonly resolve: (reply: DecisionReply) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Redis replies that mean "not now" rather than "your script is wrong": the failure policy
 * applies to them, as to a lost connection.
 */
const UNAVAILABLE_REPLIES = [
  "LOADING",
  "BUSY",
  "READONLY",
  "MASTERDOWN",
  "CLUSTERDOWN",
  "TRYAGAIN",
  "OOM",
  "NOREPLICAS",
  // Cluster topology replies the client could not resolve by itself (a resharding in progress, a
  // slot moving, or keys spread over slots): the decision is not made, so the failure policy
  // answers, as for any other "not now".
  "MOVED",
  "ASK",
  "CROSSSLOT",
];

/**
 * The hash that holds a subject's state: `<prefix>rl2:{<subject>}`, e.g. `lp:rl2:{c:acme}`, one
 * field per bucket (`:<bucket>`, the packed state) and `x`, the key's expiry deadline. A sliding
 * log, whose state is a sorted set, has a key of its own: {@link redisLogKey}.
 *
 * The subject is the Redis Cluster hash tag, so every key of one decision lands in one slot and a
 * layered decision is one script call on Cluster too. Inside the tag `%`, `{` and `}` are
 * percent-encoded, so a subject holding braces cannot end the tag early, and the first `}` after
 * the tag's `{` always closes it: that makes keys collision-proof (the subject is read back up to
 * that `}`, and a log's bucket is the rest) whatever either contains. The empty subject is `%`,
 * which no encoded subject can be, so its tag is never empty (an empty tag would hash the whole
 * key).
 */
export function redisSubjectKey(keyPrefix: string, subject: string): string {
  return `${keyPrefix}rl2:{${hashTagOf(subject)}}`;
}

/**
 * A sliding log's key under a subject: `<prefix>rl:{<subject>}:<bucket>`, e.g.
 * `lp:rl:{c:acme}:endpoint:reports`, in the slot of its subject's hash (the same hash tag).
 */
export function redisLogKey(keyPrefix: string, subject: string, bucket: string): string {
  return `${keyPrefix}rl:{${hashTagOf(subject)}}:${bucket}`;
}

function hashTagOf(subject: string): string {
  if (subject === "") return "%";
  if (!/[%{}]/.test(subject)) return subject;
  return subject.replaceAll("%", "%25").replaceAll("{", "%7B").replaceAll("}", "%7D");
}

/**
 * The script argument of each limit seen, by identity, as enforced and as dry-run. Limits come
 * from a compiled policy and are reused for every request, so each is checked and turned into
 * text once, not per decision.
 */
const argsByLimit = new WeakMap<LimitSpec | LeakyShaperLimit, { e: string; d: string }>();

/** A check's argument with its bucket, by identity (checks, like limits, come from the policy). */
const argsByCheck = new WeakMap<LimitCheck, string>();

/** The script's argument for one check: algorithm code, two parameters, mode, then bucket. */
function checkArgOf(check: LimitCheck): string {
  let arg = argsByCheck.get(check);
  if (arg === undefined) {
    arg = `${checkArg(check.limit, check.mode)} ${check.bucket ?? check.scope}`;
    argsByCheck.set(check, arg);
  }
  return arg;
}

/** The algorithm code, two parameters and mode of a limit. */
function checkArg(limit: LimitSpec | LeakyShaperLimit, mode: LimitMode): string {
  let args = argsByLimit.get(limit);
  if (args === undefined) {
    const [code, first, second] = checkedLimitArgs(limit);
    const text = `${code} ${first} ${second}`;
    args = { e: `${text} e`, d: `${text} d` };
    argsByLimit.set(limit, args);
  }
  return mode === "enforce" ? args.e : args.d;
}

/** The algorithm code and two parameters, after the core's checks (once per limit). */
function checkedLimitArgs(limit: LimitSpec | LeakyShaperLimit): [string, string, string] {
  assertValidLimit(limit);
  switch (limit.algorithm) {
    case "fixed-window":
      return ["1", String(limit.limit), String(limit.windowMs)];
    case "sliding-log":
      return ["2", String(limit.limit), String(limit.windowMs)];
    case "sliding-window":
      return ["3", String(limit.limit), String(limit.windowMs)];
    case "token-bucket":
      return ["4", String(limit.capacity), String(limit.refillPerSec)];
    case "leaky-meter":
      return ["5", String(limit.burst), String(limit.drainPerSec)];
    case "leaky-shaper":
      return ["6", String(limit.maxQueue), String(limit.drainPerSec)];
    default: {
      const unknown: never = limit;
      throw new TypeError(`unknown limit algorithm: ${JSON.stringify(unknown)}`);
    }
  }
}

/** A decision's `limit`: the size of the limit, whichever name it has. */
function sizeOf(limit: LimitSpec | LeakyShaperLimit): number {
  return limit.algorithm === "leaky-shaper" ? limit.maxQueue : limitSizeOf(limit);
}

/** A reply that means "not now" (see UNAVAILABLE_REPLIES). */
function isTransientReply(error: Error): boolean {
  return UNAVAILABLE_REPLIES.some((prefix) => error.message.startsWith(prefix));
}

/**
 * The error to throw for a failed call: `StoreUnavailableError` when Redis could not answer (no
 * reply at all, or a reply that means "not now"), the original error otherwise (a script or
 * protocol bug must not be mistaken for an outage and silently run the failure policy).
 */
function asStoreError(error: unknown): unknown {
  if (error instanceof Error && error.name === "ReplyError") {
    return isTransientReply(error)
      ? new StoreUnavailableError(`Redis refused the decision: ${error.message}`, { cause: error })
      : error;
  }
  const message = error instanceof Error ? error.message : String(error);
  return new StoreUnavailableError(`Redis did not answer: ${message}`, { cause: error });
}

/** The script's reply, checked to be the packed bytes of `length` it must be. */
function replyBytes(reply: unknown, length: number): Buffer {
  if (!Buffer.isBuffer(reply) || reply.length !== length) {
    const shown = Buffer.isBuffer(reply) ? `${reply.length} bytes` : JSON.stringify(reply);
    throw new TypeError(`unexpected script reply: ${shown}, expected ${length} bytes`);
  }
  return reply;
}

/** Redis will not load a function library: no FUNCTION command (before 7.0), or an ACL without it. */
function isFunctionRefused(error: unknown): boolean {
  return error instanceof Error && /^(ERR unknown (sub)?command|NOPERM)/i.test(error.message);
}

/** Redis has no function of that name (a new, restarted or flushed Redis), or no FCALL at all. */
function isFunctionMissing(error: unknown): boolean {
  return (
    error instanceof Error &&
    (error.message.startsWith("ERR Function not found") ||
      /^ERR unknown command .?fcall/i.test(error.message))
  );
}

function reasonOf(code: number): RejectReason | null {
  const reason = REASONS[code];
  if (reason === undefined) throw new TypeError(`unknown reply code ${code}`);
  return reason;
}

/**
 * The Redis store: every decision is ONE call of one Lua script, whatever the number of checks,
 * so it is atomic across every gateway sharing the Redis. The script mirrors the pure algorithms
 * and the layered combiner exactly (see `redis-decide-script.ts`); this class validates input,
 * builds keys and arguments, and reads the reply. The top-level decision is built by the core's
 * `combineOutcomes`.
 *
 * - Time: Redis's `TIME`, read inside the script; never the client's clock.
 * - Keys: one hash per subject ({@link redisSubjectKey}), a field per bucket, so a decision reads
 *   and writes one key however many layers it checks (a sliding log has a key of its own,
 *   {@link redisLogKey}). Named by the subject and the check's bucket, never by the limit's
 *   numbers, so a policy edit neither resets nor refills a bucket (a lowered capacity clamps the
 *   stored balance, a raised one adds nothing until time refills it); the stored state names its
 *   algorithm, so switching algorithm starts the bucket fresh.
 * - Expiry: every write leaves the key a TTL at least the longest state's lifetime (see the
 *   script); nothing is left without one.
 * - Scripts: FCALL of the decide library, loaded by the store itself when Redis lacks it (a new,
 *   restarted or flushed Redis); or EVALSHA, and EVAL when Redis answers NOSCRIPT, for a Redis
 *   that refuses functions ({@link RedisStoreOptions.scriptForm}).
 * - Failure: when Redis cannot answer, {@link StoreUnavailableError}, within the client's command
 *   timeout; other errors (a bad argument, a script bug) propagate as they are. A call that timed
 *   out may still have been applied by Redis: at most once, and the failure policy decides.
 * - Throughput: with `maxBatchSize` above 1, decisions made in one event-loop turn share script
 *   calls (see {@link RedisStoreOptions.maxBatchSize}); each is still evaluated on its own.
 *
 * ```ts
 * const store = new RedisStore({
 *   client: createRedisClient("decisions", { url: "redis://127.0.0.1:6379" }),
 *   keyPrefix: "lp:",
 *   maxBatchSize: 64,
 * });
 * const decision = await store.decide({ subject: "c:acme", checks });
 * ```
 */
export class RedisStore implements LimiterStore {
  /** SHA-1 of the EVAL form of the script; see `REDIS_DECIDE_SHA1`. */
  static readonly scriptSha1 = REDIS_DECIDE_SHA1;
  /** The name of the function the store calls with FCALL; see `REDIS_DECIDE_FUNCTION`. */
  static readonly functionName = REDIS_DECIDE_FUNCTION;

  readonly #client: RedisScriptClient;
  readonly #keyPrefix: string;
  readonly #clock: Clock | undefined;
  readonly #marginMs: string;
  readonly #maxBatchSize: number;
  /** The EVAL re-caching the script after a NOSCRIPT, while one is in flight. */
  #reloading: Promise<unknown> | undefined;
  #scriptForm: RedisScriptForm;
  /** The FUNCTION LOAD after a missing function, while one is in flight. */
  #loading: Promise<void> | undefined;
  /** Batches per hash slot on Redis Cluster; one batch (slot 0) on a single Redis. */
  readonly #isCluster: boolean;
  /**
   * Decisions waiting for their batch to fill or for the end of this event-loop turn, by slot.
   * A batch is removed once sent, so the map holds at most the slots used in one turn.
   */
  #queues = new Map<number, PendingDecision[]>();
  #isFlushScheduled = false;
  /**
   * Decisions held back (`LeaseWanted.maxDelayMs`), by slot, oldest first: each leaves with the
   * next batch sent for its slot, or when `#heldTimer` fires at the earliest of their deadlines.
   */
  #held = new Map<number, PendingDecision[]>();
  #heldTimer: TimerHandle | undefined;
  /** When `#heldTimer` fires, on `#timers`' clock. */
  #heldDeadlineMs = Number.POSITIVE_INFINITY;
  readonly #timers: Timers & Clock;
  /** Decisions sent in batches whose reply has not come back yet. */
  #inFlight = 0;

  constructor(options: RedisStoreOptions) {
    if (/[{}]/.test(options.keyPrefix)) {
      throw new RangeError(
        `keyPrefix must not contain "{" or "}" (it would move the hash tag), got ${JSON.stringify(options.keyPrefix)}`,
      );
    }
    this.#client = options.client;
    this.#keyPrefix = options.keyPrefix;
    this.#clock = options.clock;
    this.#marginMs = String(
      options.clock === undefined ? EXPIRY_MARGIN_MS : TEST_CLOCK_EXPIRY_MARGIN_MS,
    );
    const maxBatchSize = options.maxBatchSize ?? 1;
    if (!Number.isInteger(maxBatchSize) || maxBatchSize < 1) {
      throw new RangeError(`maxBatchSize must be a whole number >= 1, got ${maxBatchSize}`);
    }
    this.#maxBatchSize = maxBatchSize;
    this.#isCluster = options.client.isCluster === true;
    const scriptForm = options.scriptForm ?? "function";
    if (scriptForm !== "function" && scriptForm !== "eval") {
      throw new RangeError(
        `scriptForm must be "function" or "eval", got ${JSON.stringify(scriptForm)}`,
      );
    }
    this.#scriptForm = scriptForm;
    this.#timers = options.timers ?? SYSTEM_TIMERS;
  }

  /**
   * How decisions run now: `function` (FCALL of the loaded library), or `eval` (EVALSHA), asked
   * for or fallen back to because Redis refused to load the library. Worth a line in a gateway's
   * startup log: `eval` costs Redis more per call.
   */
  get scriptForm(): RedisScriptForm {
    return this.#scriptForm;
  }

  /** The Redis hash of `subject`'s state, with this store's prefix ({@link redisSubjectKey}). */
  subjectKey(subject: string): string {
    return redisSubjectKey(this.#keyPrefix, subject);
  }

  /** The key of `subject`'s sliding log `bucket`, with this store's prefix ({@link redisLogKey}). */
  logKey(subject: string, bucket: string): string {
    return redisLogKey(this.#keyPrefix, subject, bucket);
  }

  decide(input: DecideInput): Promise<LayeredDecision> {
    return this.#layered("d", input);
  }

  /**
   * {@link decide}, and when the request is admitted, a lease of up to `lease.units` more units
   * of cost on every check, charged now, for this caller alone to spend without asking Redis
   * again until `lifeMs` (measured from before this call was sent) has passed. The grant is 0
   * near a limit (each check grants at most half of what it has left), for a sliding log or a
   * leaky meter, and on rejection; see the script for why spending a granted unit within its lifetime never
   * admits more than the limit. `remaining` in the decision does not count the leased units.
   */
  async decideLeasing(input: DecideInput, lease: LeaseWanted): Promise<LeasedDecision> {
    assertLeaseWanted(lease);
    const { decision, reply, offset, atMs } = await this.#layeredReply(
      "l",
      input,
      ` ${lease.units} ${lease.lifeMs}`,
      LEASE_BYTES,
      lease.maxDelayMs,
    );
    if (reply === null) return { decision, units: 0, lifeMs: 0, grantedAtMs: atMs };
    return {
      decision,
      units: reply.readDoubleLE(offset),
      lifeMs: reply.readDoubleLE(offset + 8),
      grantedAtMs: atMs,
    };
  }

  /**
   * Gives back `lease.units` of a lease granted by {@link decideLeasing} at `lease.grantedAtMs`
   * that the caller will never spend (see `LimiterStore.returnLease` and the script's return).
   * One call, atomic; resolves to the units given back on the check that took back least (0 when
   * the window they came from is over, or the limit changed algorithm since).
   */
  async returnLease(input: DecideInput, lease: LeaseReturn): Promise<number> {
    assertLeaseReturn(lease);
    const checks = input.checks;
    assertName("subject", input.subject);
    assertValidChecks(checks);
    if (checks.length === 0 || lease.units === 0) return 0;
    const nowMs = this.#clock?.nowMs();
    const args = [
      this.#headArg(
        "r",
        nowMs,
        lease.units,
        checks.length,
        ` ${String(lease.grantedAtMs)} ${lease.lifeMs}`,
      ),
    ];
    const keys = [this.subjectKey(input.subject)];
    for (const check of checks) {
      if (check.limit.algorithm === "sliding-log") {
        keys.push(this.logKey(input.subject, check.bucket ?? check.scope));
      }
      args.push(checkArgOf(check));
    }
    const { reply, offset } = await this.#submit(
      keys,
      args,
      checks.length * RETURN_BYTES,
      lease.maxDelayMs,
    );
    let least = Number.POSITIVE_INFINITY;
    for (let index = 0; index < checks.length; index++) {
      least = Math.min(least, reply.readDoubleLE(offset + index * RETURN_BYTES));
    }
    return least;
  }

  /** The decision a request of `cost` would get now. Reads only: it writes and refreshes nothing. */
  peek(input: DecideInput): Promise<LayeredDecision> {
    return this.#layered("p", input);
  }

  /**
   * A leaky shaper's answer, reserving the request's slot when admitted: wait `delayMs` before
   * doing the work. One script call; a rejection writes nothing.
   */
  shape(input: ShapeInput): Promise<ShapedDecision> {
    return this.#shaped("s", input);
  }

  /** What {@link shape} would answer now, reserving nothing. */
  peekShape(input: ShapeInput): Promise<ShapedDecision> {
    return this.#shaped("q", input);
  }

  /**
   * A decision's leading argument: op, time (`nowMs`, the injected clock's reading, or "-" for
   * Redis TIME), cost, number of checks, and for a lease (`tail`) the units and lifetime wanted.
   */
  #headArg(
    op: "d" | "p" | "s" | "q" | "l" | "r",
    nowMs: number | undefined,
    cost: number,
    checkCount: number,
    tail = "",
  ): string {
    if (nowMs === undefined && cost === 1 && op !== "l" && op !== "r") {
      // Production's usual decision: the same text every time, made once.
      const cached = HEADS_AT_COST_1[op][checkCount];
      if (cached !== undefined) return cached;
    }
    // Redis's TIME is always a valid time; only an injected clock's reading needs checking.
    assertTimeAndCost(nowMs ?? 0, cost);
    return `${op} ${nowMs === undefined ? "-" : String(nowMs)} ${String(cost)} ${checkCount}${tail}`;
  }

  async #layered(op: "d" | "p", input: DecideInput): Promise<LayeredDecision> {
    return (await this.#layeredReply(op, input, "", 0)).decision;
  }

  /** A layered call's decision, with its reply and where the checks' part ends (null: no checks). */
  async #layeredReply(
    op: "d" | "p" | "l",
    input: DecideInput,
    headTail: string,
    extraBytes: number,
    maxDelayMs = 0,
  ): Promise<{ decision: LayeredDecision; reply: Buffer | null; offset: number; atMs: number }> {
    const checks = input.checks;
    assertName("subject", input.subject);
    assertValidChecks(checks);
    const cost = input.cost === undefined ? 1 : input.cost;
    const nowMs = this.#clock?.nowMs();
    const args = [this.#headArg(op, nowMs, cost, checks.length, headTail)];
    if (checks.length === 0) {
      return { decision: combineOutcomes([]), reply: null, offset: 0, atMs: nowMs ?? 0 };
    }
    const keys = [this.subjectKey(input.subject)];
    for (const check of checks) {
      if (check.limit.algorithm === "sliding-log") {
        keys.push(this.logKey(input.subject, check.bucket ?? check.scope));
      }
      args.push(checkArgOf(check));
    }
    const answer = await this.#submit(
      keys,
      args,
      checks.length * CHECK_BYTES + extraBytes,
      maxDelayMs,
    );
    const reply = answer.reply;
    const outcomes: LimitOutcome[] = [];
    let offset = answer.offset;
    for (const check of checks) {
      outcomes.push(outcomeOf(reply, offset, check));
      offset += CHECK_BYTES;
    }
    const decision = combineOutcomes(outcomes);
    const atMs = nowMs ?? answer.timeUs / 1000;
    setStoreTime(decision, { nowMs: atMs, indexInCall: answer.indexInCall });
    return { decision, reply, offset, atMs };
  }

  async #shaped(op: "s" | "q", input: ShapeInput): Promise<ShapedDecision> {
    assertName("subject", input.subject);
    assertName("bucket", input.bucket);
    if (input.limit?.algorithm !== "leaky-shaper") {
      throw new TypeError(
        `limit.algorithm must be "leaky-shaper" to shape, got ${JSON.stringify(input.limit?.algorithm)}`,
      );
    }
    const args = [
      this.#headArg(op, this.#clock?.nowMs(), input.cost === undefined ? 1 : input.cost, 1),
      `${checkArg(input.limit, "enforce")} ${input.bucket}`,
    ];
    const key = this.subjectKey(input.subject);
    const { reply, offset } = await this.#submit([key], args, SHAPE_BYTES);
    const code = reply.readUInt8(offset);
    return {
      allowed: code === 0,
      limit: input.limit.maxQueue,
      remaining: reply.readDoubleLE(offset + 1),
      retryAfterMs: reply.readDoubleLE(offset + 9),
      resetAfterMs: reply.readDoubleLE(offset + 17),
      reason: reasonOf(code),
      delayMs: reply.readDoubleLE(offset + 25),
    };
  }

  /**
   * One decision's reply: sent alone, or queued for a batch. A batch leaves once it holds as many
   * decisions as are in flight (at least one), or `maxBatchSize`, and otherwise at the end of
   * this event-loop turn (see {@link RedisStoreOptions.maxBatchSize}). Leaving early is what
   * keeps Redis and the client working at the same time under load: the replies of one batch
   * arrive while Redis runs the other, and their callers' next decisions fill a new batch, which
   * leaves at once instead of waiting for the turn to end behind the others.
   *
   * A decision that may wait (`maxDelayMs` > 0, a lease refill nobody waits on) is held back
   * instead, and rides with the next batch of its slot or leaves when its delay is up: refills
   * come one at a time, a few ms apart, and each alone would cost a round trip of its own.
   */
  #submit(
    keys: readonly string[],
    args: readonly string[],
    replyLength: number,
    maxDelayMs = 0,
  ): Promise<DecisionReply> {
    if (this.#maxBatchSize === 1) {
      return this.#run(keys, [this.#marginMs, ...args]).then((reply) => {
        const checked = replyBytes(reply, replyLength + TIME_BYTES);
        return {
          reply: checked,
          offset: 0,
          timeUs: checked.readDoubleLE(replyLength),
          indexInCall: 0,
        };
      });
    }
    // Every key of one decision shares its subject's hash tag, so the first key's slot is the
    // decision's. Computed only on Cluster: a single Redis takes any keys in one script.
    const slot = this.#isCluster ? calculateSlot(keys[0] ?? "") : 0;
    if (maxDelayMs > 0) {
      return new Promise((resolve, reject) => {
        this.#hold({ slot, keys, args, replyLength, resolve, reject }, maxDelayMs);
      });
    }
    return new Promise((resolve, reject) => {
      let queue = this.#queues.get(slot);
      if (queue === undefined) {
        queue = [];
        this.#queues.set(slot, queue);
      }
      queue.push({ slot, keys, args, replyLength, resolve, reject });
      if (queue.length >= Math.min(this.#maxBatchSize, Math.max(1, this.#inFlight))) {
        this.#queues.delete(slot);
        this.#sendBatch(queue);
      } else if (!this.#isFlushScheduled) {
        this.#isFlushScheduled = true;
        setImmediate(() => {
          this.#isFlushScheduled = false;
          this.#flush();
        });
      }
    });
  }

  /** Sends the decisions queued so far: one script call per slot. */
  #flush(): void {
    const queues = this.#queues;
    if (queues.size === 0) return;
    this.#queues = new Map();
    for (const queue of queues.values()) this.#sendBatch(queue);
  }

  /** Holds `pending` back for at most `maxDelayMs` (see {@link #submit}). */
  #hold(pending: PendingDecision, maxDelayMs: number): void {
    let held = this.#held.get(pending.slot);
    if (held === undefined) {
      held = [];
      this.#held.set(pending.slot, held);
    }
    held.push(pending);
    const deadlineMs = this.#timers.nowMs() + maxDelayMs;
    if (deadlineMs >= this.#heldDeadlineMs) return;
    this.#cancelHeldTimer();
    this.#heldDeadlineMs = deadlineMs;
    this.#heldTimer = this.#timers.setTimer(() => this.sendHeld(), maxDelayMs);
  }

  /**
   * Sends every decision held back now (`LeaseWanted.maxDelayMs`), in batches of at most
   * `maxBatchSize` per slot: what the timer does when the earliest delay is up, and what a caller
   * about to close the connection calls, so that they are answered.
   */
  sendHeld(): void {
    this.#cancelHeldTimer();
    const held = this.#held;
    this.#held = new Map();
    for (const decisions of held.values()) {
      for (let start = 0; start < decisions.length; start += this.#maxBatchSize) {
        this.#sendBatch(decisions.slice(start, start + this.#maxBatchSize));
      }
    }
  }

  /** No timer for the decisions held back (none are, or they are being sent). */
  #cancelHeldTimer(): void {
    this.#heldTimer?.cancel();
    this.#heldTimer = undefined;
    this.#heldDeadlineMs = Number.POSITIVE_INFINITY;
  }

  /**
   * Sends `queued` in one script call, led by as many decisions held back for the same slot as
   * fit beside it (they were made earlier, so they run first).
   */
  #sendBatch(queued: readonly PendingDecision[]): void {
    let batch = queued;
    const slot = queued[0]?.slot ?? 0;
    const held = this.#held.get(slot);
    if (held !== undefined && queued.length < this.#maxBatchSize) {
      const riders = held.splice(0, this.#maxBatchSize - queued.length);
      if (held.length === 0) this.#held.delete(slot);
      if (this.#held.size === 0) this.#cancelHeldTimer();
      batch = [...riders, ...queued];
    }
    const keys: string[] = [];
    const args: string[] = [this.#marginMs];
    let replyLength = 0;
    for (const pending of batch) {
      for (const key of pending.keys) keys.push(key);
      for (const arg of pending.args) args.push(arg);
      replyLength += pending.replyLength;
    }
    const size = batch.length;
    this.#inFlight += size;
    this.#run(keys, args).then(
      (reply) => {
        this.#inFlight -= size;
        let checked: Buffer;
        try {
          checked = replyBytes(reply, replyLength + TIME_BYTES);
        } catch (error: unknown) {
          for (const pending of batch) pending.reject(error);
          return;
        }
        const timeUs = checked.readDoubleLE(replyLength);
        let offset = 0;
        for (let index = 0; index < size; index++) {
          const pending = batch[index] as PendingDecision;
          pending.resolve({ reply: checked, offset, timeUs, indexInCall: index });
          offset += pending.replyLength;
        }
      },
      (error: unknown) => {
        this.#inFlight -= size;
        for (const pending of batch) pending.reject(error);
      },
    );
  }

  /** One command running the decide code: FCALL of the function, or EVALSHA or EVAL of the text. */
  #send(
    command: "fcall" | "evalsha" | "eval",
    code: string,
    keys: readonly string[],
    args: readonly string[],
  ): Promise<unknown> {
    return this.#client.callBuffer(command, code, keys.length, ...keys, ...args);
  }

  /** One call of the decide code, in the form in use (see {@link RedisStore.scriptForm}). */
  #run(keys: readonly string[], args: readonly string[]): Promise<unknown> {
    return this.#scriptForm === "function"
      ? this.#runFunction(keys, args)
      : this.#runEval(keys, args);
  }

  /**
   * FCALL of the decide function. When Redis has no such function (a new, restarted or flushed
   * Redis, a failover to a replica that never had it, or a Cluster node the slot moved to), ONE
   * call loads the library (on every primary of a Cluster) and the calls that failed meanwhile
   * wait for it, then call again: a flush under load costs one upload, not one per decision in
   * flight. If Redis refuses to load it (no FUNCTION command, or an ACL without it), the store
   * goes on with EVALSHA from then on.
   */
  async #runFunction(keys: readonly string[], args: readonly string[]): Promise<unknown> {
    try {
      return await this.#send("fcall", REDIS_DECIDE_FUNCTION, keys, args);
    } catch (error: unknown) {
      if (!isFunctionMissing(error)) throw asStoreError(error);
    }
    this.#loading ??= this.#loadLibrary().finally(() => {
      this.#loading = undefined;
    });
    await this.#loading;
    if (this.#scriptForm === "eval") return this.#runEval(keys, args);
    try {
      return await this.#send("fcall", REDIS_DECIDE_FUNCTION, keys, args);
    } catch (error: unknown) {
      throw asStoreError(error);
    }
  }

  /**
   * `FUNCTION LOAD REPLACE` of the library, on the client or on every primary of a Cluster
   * (REPLACE: loading the same code again changes nothing). Refused (no FUNCTION command, or an
   * ACL without it): the store falls back to EVALSHA. No answer at all is an outage, as for a
   * decision; any other error (a bug in the library) propagates as it is.
   */
  async #loadLibrary(): Promise<void> {
    const client = this.#client;
    const targets =
      this.#isCluster && client.nodes !== undefined ? client.nodes("master") : [client];
    try {
      await Promise.all(
        targets.map((target) => target.call("FUNCTION", "LOAD", "REPLACE", REDIS_DECIDE_LIBRARY)),
      );
    } catch (error: unknown) {
      if (!isFunctionRefused(error)) throw asStoreError(error);
      this.#scriptForm = "eval";
    }
  }

  /**
   * One EVALSHA, the script's 40-byte name. When Redis answers NOSCRIPT (after `SCRIPT FLUSH`, a
   * restart or a failover to a fresh replica), ONE call re-sends the whole text with EVAL, which
   * also caches it again, and the calls that failed meanwhile wait for it and retry EVALSHA.
   */
  async #runEval(keys: readonly string[], args: readonly string[]): Promise<unknown> {
    try {
      return await this.#send("evalsha", REDIS_DECIDE_SHA1, keys, args);
    } catch (error: unknown) {
      if (!isNoScript(error)) throw asStoreError(error);
    }
    const reloading = this.#reloading;
    if (reloading === undefined) return this.#evalAndCache(keys, args);
    // Whether the reload succeeded is its own caller's to report; this call tries again.
    await reloading.catch(() => undefined);
    try {
      return await this.#send("evalsha", REDIS_DECIDE_SHA1, keys, args);
    } catch (error: unknown) {
      if (!isNoScript(error)) throw asStoreError(error);
    }
    return this.#evalAndCache(keys, args);
  }

  async #evalAndCache(keys: readonly string[], args: readonly string[]): Promise<unknown> {
    const call = this.#send("eval", REDIS_DECIDE_LUA, keys, args);
    this.#reloading = call;
    try {
      return await call;
    } catch (error: unknown) {
      throw asStoreError(error);
    } finally {
      if (this.#reloading === call) this.#reloading = undefined;
    }
  }
}

function outcomeOf(reply: Buffer, offset: number, check: LimitCheck): LimitOutcome {
  const code = reply.readUInt8(offset);
  return {
    allowed: code === 0,
    limit: sizeOf(check.limit),
    remaining: reply.readDoubleLE(offset + 1),
    retryAfterMs: reply.readDoubleLE(offset + 9),
    resetAfterMs: reply.readDoubleLE(offset + 17),
    reason: reasonOf(code),
    scope: check.scope,
    mode: check.mode,
  };
}
