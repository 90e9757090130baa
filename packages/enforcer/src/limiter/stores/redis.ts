/// <reference path="./cluster-key-slot.d.ts" />
import calculateSlot from "cluster-key-slot";
import { assertName, assertValidChecks } from "../arguments";
import { type Clock, monotonicClock } from "../clock";
import { combineOutcomes } from "../layered";
import type { ShapedDecision } from "../leaky-shaper";
import { systemTimers, type Timers } from "../timers";
import type {
  DecideInput,
  LayeredDecision,
  LeakyShaperLimit,
  LeasedDecision,
  LeaseReturn,
  LeaseWanted,
  LimiterStore,
  LimitOutcome,
} from "../types";
import { DecisionBatcher } from "./redis-batching";
import { REDIS_DECIDE_FUNCTION, REDIS_DECIDE_SHA1 } from "./redis-decide-script";
import {
  assertLeaseReturn,
  assertLeaseWanted,
  CHECK_BYTES,
  checkArg,
  EXPIRY_MARGIN_MS,
  headArg,
  LEASE_BYTES,
  outcomeOf,
  pushChecks,
  RETURN_BYTES,
  redisLogKey,
  redisSubjectKey,
  SHAPE_BYTES,
  shapedOf,
  TEST_CLOCK_EXPIRY_MARGIN_MS,
} from "./redis-encoding";
import {
  type RedisNodeClient,
  type RedisScriptClient,
  type RedisScriptForm,
  RedisScriptRunner,
} from "./redis-script-runner";
import { setStoreTime } from "./store-time";
import { StoreUnavailableError } from "./store-unavailable-error";

/** A `replicated` decision on a store given no replicated connection: the failure policy decides. */
const NO_REPLICATED_CONNECTION = new StoreUnavailableError(
  'a limit asks for durability "replicated" but the store has no replicated connection (RedisStoreOptions.replicated)',
);

export { redisLogKey, redisSubjectKey } from "./redis-encoding";
export type { RedisNodeClient, RedisScriptClient, RedisScriptForm } from "./redis-script-runner";

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
  /**
   * Where decisions with a `replicated` check go (`LimitCheck.durability`): a connection of its
   * own, because `WAIT` blocks the connection it is sent on (on the decisions connection every
   * other decision would queue behind it), and because `WAIT` counts the writes of its own
   * connection only, so it must follow the decision's call there. Each call (a batch) is followed
   * by `WAIT <replicas> <waitMs>`; fewer acknowledgements than `replicas` fail the call's
   * decisions with {@link StoreUnavailableError}, for the failure policy to decide (the writes
   * stay on the primary, which can only admit less). Without it, such decisions fail the same
   * way.
   *
   * On a Cluster (a Cluster client of its own, like the decisions one), each call runs on the
   * connection to the master that owns its slot (the client's slot table), and WAIT follows on
   * that same connection: a keyless WAIT sent through the Cluster client would go to any node and
   * count nothing of the decision's. Batches are made per slot. A slot that moved meanwhile
   * answers MOVED, and the failure policy decides that call (never retried); any failed call
   * makes the Cluster client read its slot table again, so after a failover the next calls go to
   * the promoted master.
   */
  readonly replicated?: ReplicatedConnection;
}

/** See {@link RedisStoreOptions.replicated}. */
export interface ReplicatedConnection {
  /**
   * A connection used for nothing else, like the decisions one (command timeout, no offline
   * queue); on a Cluster, a Cluster client used for nothing else.
   */
  readonly client: RedisScriptClient;
  /** Replicas that must acknowledge. @default 1 */
  readonly replicas?: number;
  /**
   * How long `WAIT` waits for them, in ms; keep it under the enforcer's `maxWaitMs`. A replica
   * acknowledges at once when asked (WAIT asks), so this only runs out when none is connected or
   * all are far behind.
   * @default 500
   */
  readonly waitMs?: number;
}

/**
 * The Cluster client's own connection to the master that owns `slot` now, as its slot table says.
 * Not known (the client has no slot table yet, or no connection to that master: it died and the
 * table has not moved on) is "not now": the failure policy decides.
 */
function slotMasterConnection(client: RedisScriptClient, slot: number): RedisNodeClient {
  const master = client.slots?.[slot]?.[0];
  if (master === undefined) {
    throw new StoreUnavailableError(`the Cluster client knows no master for slot ${slot} yet`);
  }
  const node = client
    .nodes?.("master")
    .find((candidate) => `${candidate.options.host}:${candidate.options.port}` === master);
  if (node === undefined) {
    throw new StoreUnavailableError(
      `the Cluster client has no connection to ${master}, the master of slot ${slot}`,
    );
  }
  return node;
}

const SYSTEM_TIMERS: Timers & Clock = {
  setTimer: systemTimers.setTimer,
  nowMs: monotonicClock.nowMs,
};

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
 * The Redis store: every decision is ONE call of one Lua script, whatever the number of checks,
 * so it is atomic across every gateway sharing the Redis. The script mirrors the pure algorithms
 * and the layered combiner exactly (see `redis-decide.lua`); this class validates input and
 * puts the pieces together: `redis-encoding.ts` builds keys and arguments and reads the reply,
 * `redis-batching.ts` gathers decisions into calls, `redis-script-runner.ts` runs the script. The top-level decision is built by the core's
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

  readonly #keyPrefix: string;
  readonly #clock: Clock | undefined;
  readonly #runner: RedisScriptRunner;
  readonly #batcher: DecisionBatcher;
  readonly #client: RedisScriptClient;
  /** Decisions with a `replicated` check: their own connection, each call followed by WAIT. */
  readonly #replicatedBatcher: DecisionBatcher | null;

  constructor(options: RedisStoreOptions) {
    if (/[{}]/.test(options.keyPrefix)) {
      throw new RangeError(
        `keyPrefix must not contain "{" or "}" (it would move the hash tag), got ${JSON.stringify(options.keyPrefix)}`,
      );
    }
    this.#keyPrefix = options.keyPrefix;
    this.#client = options.client;
    this.#clock = options.clock;
    this.#batcher = new DecisionBatcher({
      run: (keys, args) => this.#runner.run(keys, args),
      leadingArg: String(
        options.clock === undefined ? EXPIRY_MARGIN_MS : TEST_CLOCK_EXPIRY_MARGIN_MS,
      ),
      maxBatchSize: options.maxBatchSize ?? 1,
      isCluster: options.client.isCluster === true,
      timers: options.timers ?? SYSTEM_TIMERS,
    });
    this.#runner = new RedisScriptRunner(options.client, options.scriptForm);
    this.#replicatedBatcher = this.#makeReplicatedBatcher(options);
  }

  #makeReplicatedBatcher(options: RedisStoreOptions): DecisionBatcher | null {
    const replicated = options.replicated;
    if (replicated === undefined) return null;
    const replicas = replicated.replicas ?? 1;
    const waitMs = replicated.waitMs ?? 500;
    if (!Number.isInteger(replicas) || replicas < 1 || replicas > 100) {
      throw new RangeError(
        `replicated.replicas must be a whole number from 1 to 100, got ${replicas}`,
      );
    }
    if (!Number.isInteger(waitMs) || waitMs < 1 || waitMs > 60_000) {
      throw new RangeError(
        `replicated.waitMs must be a whole number from 1 to 60000, got ${waitMs}`,
      );
    }
    const client = replicated.client;
    const isCluster = client.isCluster === true;
    const onClient = new RedisScriptRunner(client, options.scriptForm);
    // One runner per node connection: each loads the library on its own node when it lacks it.
    const onNode = new WeakMap<RedisNodeClient, RedisScriptRunner>();
    const targetOf = (keys: readonly string[]) => {
      if (!isCluster) return { connection: client, runner: onClient };
      const node = slotMasterConnection(client, calculateSlot(keys[0] ?? ""));
      let runner = onNode.get(node);
      if (runner === undefined) {
        runner = new RedisScriptRunner(node, options.scriptForm);
        onNode.set(node, runner);
      }
      return { connection: node, runner };
    };
    /**
     * The node this call went to may no longer own the slot (a failover, a migration): its own
     * connection does not follow MOVED, and nothing else would refresh the table that names it.
     * The call itself is not retried: the failure policy decides it.
     */
    const runOnSlotMaster = async (keys: readonly string[], args: readonly string[]) => {
      try {
        const { connection, runner } = targetOf(keys);
        return { connection, reply: await runner.run(keys, args) };
      } catch (error: unknown) {
        if (isCluster) client.refreshSlotsCache?.();
        throw error;
      }
    };
    return new DecisionBatcher({
      run: async (keys, args) => {
        const { connection, reply } = await runOnSlotMaster(keys, args);
        let acknowledged: unknown;
        try {
          acknowledged = await connection.call("WAIT", String(replicas), String(waitMs));
        } catch (error: unknown) {
          const message = error instanceof Error ? error.message : String(error);
          throw new StoreUnavailableError(`Redis did not answer WAIT: ${message}`, {
            cause: error,
          });
        }
        if (typeof acknowledged !== "number" || acknowledged < replicas) {
          throw new StoreUnavailableError(
            `NOREPLICAS ${String(acknowledged)} of ${replicas} replicas acknowledged the decision's writes within ${waitMs} ms`,
          );
        }
        return reply;
      },
      leadingArg: String(
        options.clock === undefined ? EXPIRY_MARGIN_MS : TEST_CLOCK_EXPIRY_MARGIN_MS,
      ),
      maxBatchSize: options.maxBatchSize ?? 1,
      isCluster,
      timers: options.timers ?? SYSTEM_TIMERS,
    });
  }

  /** The batcher for `checks`: the replicated one when an enforced check asks for it. */
  #batcherFor(checks: DecideInput["checks"]): DecisionBatcher {
    for (const check of checks) {
      if (check.durability === "replicated" && check.mode === "enforce") {
        if (this.#replicatedBatcher === null) throw NO_REPLICATED_CONNECTION;
        return this.#replicatedBatcher;
      }
    }
    return this.#batcher;
  }

  /**
   * How decisions run now: `function` (FCALL of the loaded library), or `eval` (EVALSHA), asked
   * for or fallen back to because Redis refused to load the library. Worth a line in a gateway's
   * startup log: `eval` costs Redis more per call.
   */
  get scriptForm(): RedisScriptForm {
    return this.#runner.scriptForm;
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
   * The master that owns `subject`'s slot now (`host:port`), as the Cluster client's slot table
   * says; "" on a single Redis (or Sentinel's primary), or before the client knows the slots.
   */
  nodeOf(subject: string): string {
    const slots = this.#client.slots;
    if (this.#client.isCluster !== true || slots === undefined) return "";
    return slots[calculateSlot(this.subjectKey(subject))]?.[0] ?? "";
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
      headArg(
        "r",
        nowMs,
        lease.units,
        checks.length,
        ` ${String(lease.grantedAtMs)} ${lease.lifeMs}`,
      ),
    ];
    const keys = [this.subjectKey(input.subject)];
    pushChecks(this.#keyPrefix, input.subject, checks, keys, args);
    const { reply, offset } = await this.#batcher.submit(
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
    const args = [headArg(op, nowMs, cost, checks.length, headTail)];
    if (checks.length === 0) {
      return { decision: combineOutcomes([]), reply: null, offset: 0, atMs: nowMs ?? 0 };
    }
    const keys = [this.subjectKey(input.subject)];
    pushChecks(this.#keyPrefix, input.subject, checks, keys, args);
    // A peek writes nothing: no replica has anything to acknowledge.
    const batcher = op === "p" ? this.#batcher : this.#batcherFor(checks);
    const answer = await batcher.submit(
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
      headArg(op, this.#clock?.nowMs(), input.cost === undefined ? 1 : input.cost, 1),
      `${checkArg(input.limit, "enforce")} ${input.bucket}`,
    ];
    const key = this.subjectKey(input.subject);
    const { reply, offset } = await this.#batcher.submit([key], args, SHAPE_BYTES);
    return shapedOf(reply, offset, input.limit);
  }

  /**
   * Sends every decision held back now (`LeaseWanted.maxDelayMs`), in batches of at most
   * `maxBatchSize` per slot: what a caller about to close the connection calls, so that they are
   * answered.
   */
  sendHeld(): void {
    this.#batcher.sendHeld();
    this.#replicatedBatcher?.sendHeld();
  }
}
