/**
 * How `RedisStore`'s decisions travel: alone (`maxBatchSize` 1), or gathered into one script
 * call per batch and, on Redis Cluster, per hash slot; decisions that may wait (a lease refill)
 * held back to ride with the next batch. Each decision gets its share of the call's reply.
 */
/// <reference path="./cluster-key-slot.d.ts" />
import calculateSlot from "cluster-key-slot";
import type { Clock } from "../clock";
import type { TimerHandle, Timers } from "../timers";
import { replyBytes, TIME_BYTES } from "./redis-encoding";

/** A decision's share of a script call's reply: where it starts, the call's time, its place. */
export interface DecisionReply {
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

export interface DecisionBatcherOptions {
  /** One script call: the decide code with these keys and arguments. */
  readonly run: (keys: readonly string[], args: readonly string[]) => Promise<unknown>;
  /** The first argument of every call (the script's ARGV[1], the expiry margin). */
  readonly leadingArg: string;
  /** Most decisions in one call; 1 sends each alone. */
  readonly maxBatchSize: number;
  /** Batches per hash slot (Redis Cluster) instead of one batch (slot 0). */
  readonly isCluster: boolean;
  /** The timer that sends decisions held back, and the clock their delay is measured on. */
  readonly timers: Timers & Clock;
}

/** Gathers decisions into script calls; see {@link DecisionBatcher.submit}. */
export class DecisionBatcher {
  readonly #run: (keys: readonly string[], args: readonly string[]) => Promise<unknown>;
  readonly #leadingArg: string;
  readonly #maxBatchSize: number;
  readonly #isCluster: boolean;
  readonly #timers: Timers & Clock;
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
  /** Decisions sent in batches whose reply has not come back yet. */
  #inFlight = 0;

  constructor(options: DecisionBatcherOptions) {
    if (!Number.isInteger(options.maxBatchSize) || options.maxBatchSize < 1) {
      throw new RangeError(`maxBatchSize must be a whole number >= 1, got ${options.maxBatchSize}`);
    }
    this.#run = options.run;
    this.#leadingArg = options.leadingArg;
    this.#maxBatchSize = options.maxBatchSize;
    this.#isCluster = options.isCluster;
    this.#timers = options.timers;
  }

  /**
   * One decision's reply: sent alone, or queued for a batch. A batch leaves once it holds as many
   * decisions as are in flight (at least one), or `maxBatchSize`, and otherwise at the end of
   * this event-loop turn (see `RedisStoreOptions.maxBatchSize`). Leaving early is what
   * keeps Redis and the client working at the same time under load: the replies of one batch
   * arrive while Redis runs the other, and their callers' next decisions fill a new batch, which
   * leaves at once instead of waiting for the turn to end behind the others.
   *
   * A decision that may wait (`maxDelayMs` > 0, a lease refill nobody waits on) is held back
   * instead, and rides with the next batch of its slot or leaves when its delay is up: refills
   * come one at a time, a few ms apart, and each alone would cost a round trip of its own.
   */
  submit(
    keys: readonly string[],
    args: readonly string[],
    replyLength: number,
    maxDelayMs = 0,
  ): Promise<DecisionReply> {
    if (this.#maxBatchSize === 1) {
      return this.#run(keys, [this.#leadingArg, ...args]).then((reply) => {
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

  /** Holds `pending` back for at most `maxDelayMs` (see {@link submit}). */
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
    const args: string[] = [this.#leadingArg];
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
}
