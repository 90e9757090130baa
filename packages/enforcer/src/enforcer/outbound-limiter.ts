/**
 * Waiting for an outbound budget: `acquire` resolves when the caller may make its call, across
 * every process that shares the Redis; `schedule` wraps a call (and its retries) in it.
 *
 * A TURN is one call of the store's turn function: a peek at the limit says when it would admit
 * the cost (a rejection's retry-after), and the caller's place is reserved there. The caller then
 * sleeps until its turn, with one timer, and goes without asking again: no polling, no herd, and a
 * process that wakes late delays only its own call, never the turns of others. Turns are given in
 * the order calls reach Redis (see `redis-outbound.lua` for the exact guarantee).
 *
 * A CONCURRENCY SLOT is taken before the turn (a turn taken first would be wasted while waiting
 * for a slot), held in Redis with a TTL the holder renews every third of it, and freed by
 * `release()`. Waiting for a slot polls Redis with jitter (25 to 75 ms, sooner when the earliest
 * slot expires sooner), and a release in this process wakes its local waiters at once.
 *
 * An abort or the end of `maxWaitMs` ends the wait with an {@link OutboundError}, frees the slot
 * and gives the turn back: nothing is charged.
 */
import { randomBytes } from "node:crypto";
import { type Clock, monotonicClock, wallClock } from "../limiter/clock";
import { RedisOutboundStore } from "../limiter/stores/redis-outbound";
import type { RedisScriptClient } from "../limiter/stores/redis-script-runner";
import { systemTimers, type TimerHandle, type Timers } from "../limiter/timers";
import { fieldErrorsFromZod } from "../policy/errors";
import { MAX_COST } from "../policy/limit-math";
import {
  outboundBudgetAt,
  outboundKeyProblem,
  type TOutboundBudget,
  type TOutboundBudgetInput,
  type TSnapshotOutboundBudget,
  ZOutboundBudget,
} from "../policy/schemas";
import { parseOutboundScope } from "../policy/scope";
import { EnforcerOptionsError } from "./enforcer-options";
import { OutboundMetrics, writeOutboundMinutes } from "./outbound-metrics";
import { runEvery } from "./reporters";

/** Why a wait ended without a permit. */
export type OutboundErrorCode =
  /** A bad argument: the message names it and the problem. */
  | "invalid-argument"
  /** The scope is not `outbound:<name>` of a configured budget. */
  | "unknown-scope"
  /** The cost exceeds what the budget's limit can ever admit at once. */
  | "cost-exceeds-limit"
  /** The earliest turn (or slot) is further away than the wait allowed. */
  | "max-wait"
  /** The caller's `signal` aborted the wait. */
  | "aborted";

/** How `acquire` refuses or gives up. Nothing is charged to the budget when it is thrown. */
export class OutboundError extends Error {
  override name = "OutboundError";
  readonly code: OutboundErrorCode;
  readonly scope: string;
  /**
   * For `max-wait`: how far away the earliest turn (or the earliest slot's expiry) was when the
   * wait ended, in ms. An estimate for a retry: other callers may take that turn first. Null for
   * every other code.
   */
  readonly retryAfterMs: number | null;

  constructor(
    code: OutboundErrorCode,
    scope: string,
    message: string,
    options?: { cause?: unknown; retryAfterMs?: number },
  ) {
    super(`${scope}: ${message}`, options);
    this.code = code;
    this.scope = scope;
    this.retryAfterMs = options?.retryAfterMs ?? null;
  }
}

export interface AcquireOptions {
  /** The budget's key, shaped as its `keyBy` says (a host, an account id, or empty). @default "" */
  readonly key?: string;
  /** Units this call spends, a whole number from 1. @default 1 */
  readonly cost?: number;
  /** Aborting it ends the wait: the promise rejects with code `aborted`. */
  readonly signal?: AbortSignal;
  /** The longest this caller waits, from 0 to the budget's `maxWaitMs`. @default the budget's */
  readonly maxWaitMs?: number;
}

/**
 * A concurrency slot handed to a holder outside the process (the rate-limit service's callers):
 * it renews it with `renewSlot` within `ttlMs` of each renewal and frees it with `releaseSlot`.
 */
export interface OutboundSlot {
  /** The holder's id: 24 lower-case hex characters, random, so no one else can guess it. */
  readonly id: string;
  /** The slot lapses this long after it was taken or last renewed. */
  readonly ttlMs: number;
}

/** Leave to make one call. Release it when the call is over (it frees the concurrency slot). */
export interface OutboundPermit {
  readonly scope: string;
  readonly key: string;
  /** The instant of the turn, in Redis time (ms since the epoch); null for a budget without a limit. */
  readonly turnAtMs: number | null;
  /** How long `acquire` waited, on the process's monotonic clock. */
  readonly waitedMs: number;
  /** True when the permit holds a concurrency slot. */
  readonly hasSlot: boolean;
  /** True when a renewal found the slot expired (the process stalled past its TTL). */
  isSlotLost(): boolean;
  /**
   * Frees the slot. Resolves true when this call freed it; false when there is none, it was
   * already released, or it had expired (then it was free already; freeing never touches
   * another holder's slot).
   */
  release(): Promise<boolean>;
  /**
   * Hands the slot to a holder outside this process: the permit stops renewing it and its
   * `release()` no longer frees it. Null when there is no slot, or it was released or detached.
   */
  detachSlot(): OutboundSlot | null;
}

export interface ScheduleOptions extends Omit<AcquireOptions, "key"> {
  /**
   * Further attempts after a failure. Each attempt waits for a turn of its own, so retries are
   * charged like any call and stay within the budget.
   * @default 0
   */
  readonly retries?: number;
  /** Which failures are retried. @default every one */
  readonly isRetryable?: (error: unknown) => boolean;
}

export interface OutboundLimiter {
  acquire(scope: string, options?: AcquireOptions): Promise<OutboundPermit>;
  /**
   * Runs `call` once a permit is granted, for each attempt, releasing the permit when the attempt
   * settles. The attempt's permit is passed in (its turn, how long it waited).
   */
  schedule<T>(
    scope: string,
    key: string,
    call: (permit: OutboundPermit) => Promise<T>,
    options?: ScheduleOptions,
  ): Promise<T>;
  /**
   * Renews a detached slot of `key` for the budget's `slotTtlMs`: the slot with its TTL, or null
   * when it had lapsed or was freed (it is not taken back).
   */
  renewSlot(scope: string, key: string, slotId: string): Promise<OutboundSlot | null>;
  /**
   * Frees a detached slot of `key`: true when this call freed it, false when it was free already
   * (released before, or lapsed). Never frees another holder's slot.
   */
  releaseSlot(scope: string, key: string, slotId: string): Promise<boolean>;
  /**
   * The budget `scope` names, as in force now (a current raise applied); throws an
   * {@link OutboundError} `unknown-scope` for any other.
   */
  budgetOf(scope: string): TOutboundBudget;
  /**
   * Adds the per-minute figures counted since the last flush to Redis (with `metrics`; without,
   * it resolves at once). Rejects when Redis does: those counts are then lost, never sent twice.
   */
  flush(): Promise<void>;
  /**
   * Stops renewing slots (they then expire), stops the periodic flush and refuses new calls.
   * Figures not yet flushed stay unsent: `await flush()` first to send them.
   */
  close(): void;
}

/**
 * Where a limiter finds the budgets of the published policy: an `Enforcer` is one (its
 * `outboundBudget`), following the policy the console publishes.
 */
export interface OutboundBudgetSource {
  /** Budget `name` in force now, or null when the policy has none of that name. */
  outboundBudget(name: string): TSnapshotOutboundBudget | null;
}

export interface OutboundLimiterOptions {
  /** The shared Redis (an ioredis client or Cluster), Redis 7.0+ (the store's function library). */
  readonly client: RedisScriptClient;
  /** Prefix of every key, as the enforcer's `redis.keyPrefix`. */
  readonly keyPrefix: string;
  /**
   * Budgets in code, as the policy model's `ZOutboundBudget` takes them. With `policy`, they are
   * the fallback for a name the policy in force does not have (before its first policy, say).
   * @default []
   */
  readonly budgets?: readonly TOutboundBudgetInput[];
  /**
   * The live policy (an `Enforcer`): each `acquire` reads its budget there first, so a budget
   * created or changed in the console applies to the next call without a restart.
   * @default none (only `budgets`)
   */
  readonly policy?: OutboundBudgetSource;
  /**
   * Per-minute figures of each budget (calls, wait percentiles, waits ended by `maxWaitMs` or an
   * abort, peak slots in flight, slots freed by their TTL), added to the installation's
   * per-minute hash in Redis every `flushIntervalMs`, from which the console's worker draws the
   * budget's charts. `true` takes every default.
   * @default false (nothing is counted or written)
   */
  readonly metrics?: boolean | OutboundMetricsOptions;
  /**
   * TESTS ONLY. Timers and the monotonic clock waits are measured on.
   * @default the process's timers and monotonic clock
   */
  readonly timers?: Timers & Clock;
  /**
   * TESTS ONLY. The wall clock a budget's raise is read on: it applies from its `startsAt` until
   * its `expiresAt` by this clock, with no new policy version needed to end it.
   * @default the system's wall clock
   */
  readonly wallClock?: Clock;
  /** TESTS ONLY. The jitter's random numbers in [0, 1). @default Math.random */
  readonly random?: () => number;
  /**
   * TESTS ONLY. Whether held slots are renewed: off, a slot lapses after its TTL as if its holder
   * had died.
   * @default true
   */
  readonly isRenewing?: boolean;
}

export interface OutboundMetricsOptions {
  /** How often the figures are written to Redis. @default 1_000 */
  readonly flushIntervalMs?: number;
  /**
   * The installation's key prefix (the enforcers' `redis.keyPrefix`), under which the worker reads
   * the per-minute hashes. Set it when the limiter's own `keyPrefix` adds to it, as
   * `<prefix>callers:` does.
   * @default the limiter's `keyPrefix`
   */
  readonly keyPrefix?: string;
  /** How long a minute's hash lives in Redis (the worker rolls it up well before). @default 21_600_000 (6 h) */
  readonly minuteBucketTtlMs?: number;
  /** The clock that says which minute a call is counted in. @default the wall clock */
  readonly wallClock?: Clock;
}

/**
 * Waits keep the process alive (a worker awaiting its turn must not exit); slot renewals do not
 * (`systemTimers` unrefs them).
 */
const SYSTEM: Timers & Clock = {
  setTimer(callback, delayMs) {
    const timer = setTimeout(callback, delayMs);
    return { cancel: () => clearTimeout(timer) };
  },
  nowMs: monotonicClock.nowMs,
};

/**
 * A published budget in the shape of one in code. Its raise (published without owner or reason)
 * is dropped: the caller has already applied it.
 */
function fromPublished(published: TSnapshotOutboundBudget): TOutboundBudget {
  const { raise: _raise, ...fields } = published;
  return { ...fields, displayName: null, raise: null };
}

/** A slot holder's id: 12 random bytes in hex. */
const SLOT_ID_PATTERN = /^[0-9a-f]{24}$/;

/** Slot polling: a random delay in [MIN, MIN + SPREAD) ms. */
const SLOT_POLL_MIN_MS = 25;
const SLOT_POLL_SPREAD_MS = 50;

function parseBudgets(budgets: readonly TOutboundBudgetInput[]): Map<string, TOutboundBudget> {
  const parsed = ZOutboundBudget.array().safeParse(budgets);
  if (!parsed.success) {
    throw new EnforcerOptionsError(fieldErrorsFromZod(parsed.error, ["budgets"]));
  }
  const byName = new Map<string, TOutboundBudget>();
  parsed.data.forEach((budget, index) => {
    if (byName.has(budget.name)) {
      throw new EnforcerOptionsError([
        { path: ["budgets", index, "name"], message: `budget "${budget.name}" is defined twice` },
      ]);
    }
    byName.set(budget.name, budget);
  });
  return byName;
}

function describe(value: unknown): string {
  if (typeof value === "string") return `the text ${JSON.stringify(value.slice(0, 40))}`;
  if (typeof value === "number") return String(value);
  return `a value of type ${typeof value}`;
}

/** Creates the waiting API over `options.budgets`. */
export function createOutboundLimiter(options: OutboundLimiterOptions): OutboundLimiter {
  const budgets = parseBudgets(options.budgets ?? []);
  const policy = options.policy;
  const store = new RedisOutboundStore({ client: options.client, keyPrefix: options.keyPrefix });
  const timers = options.timers ?? SYSTEM;
  const renewalTimers = options.timers ?? systemTimers;
  const random = options.random ?? Math.random;
  const clock = options.wallClock ?? wallClock;
  const isRenewing = options.isRenewing ?? true;
  /** Local waiters for a slot, woken when this process frees one of the subject's slots. */
  const slotWaiters = new Map<string, Set<() => void>>();
  const renewals = new Set<TimerHandle>();
  let isClosed = false;
  const metricsOptions =
    options.metrics === true ? {} : options.metrics === false ? null : (options.metrics ?? null);
  const flushIntervalMs = metricsOptions?.flushIntervalMs ?? 1_000;
  const metricsKeyPrefix = metricsOptions?.keyPrefix ?? options.keyPrefix;
  const minuteBucketTtlMs = metricsOptions?.minuteBucketTtlMs ?? 21_600_000;
  if (metricsOptions !== null) {
    for (const [name, value] of [
      ["flushIntervalMs", flushIntervalMs],
      ["minuteBucketTtlMs", minuteBucketTtlMs],
    ] as const) {
      if (!(Number.isInteger(value) && value >= 1)) {
        throw new EnforcerOptionsError([
          { path: ["metrics", name], message: `must be a whole number of ms from 1, not ${value}` },
        ]);
      }
    }
  }
  const metrics =
    metricsOptions === null
      ? null
      : new OutboundMetrics({ wallClock: metricsOptions.wallClock ?? wallClock });

  async function flush(): Promise<void> {
    if (metrics === null) return;
    const deltas = metrics.drain();
    if (deltas.length === 0) return;
    await writeOutboundMinutes(options.client, metricsKeyPrefix, deltas, minuteBucketTtlMs);
  }
  const flusher = metrics === null ? null : runEvery(renewalTimers, flushIntervalMs, flush);

  function wakeSlotWaiters(subject: string): void {
    const waiters = slotWaiters.get(subject);
    if (waiters === undefined) return;
    for (const wake of [...waiters]) wake();
  }

  /** Frees `holder`'s slot and wakes this process's waiters for one. */
  /**
   * Frees `holder`'s slot and wakes this process's waiters for the subject; counts the slots the
   * call found expired under `metricsScope` ("" when metrics are off).
   */
  async function freeSlotOf(
    metricsScope: string,
    subject: string,
    holder: string,
  ): Promise<boolean> {
    try {
      const { isDone, expired } = await store.freeSlot(subject, holder);
      metrics?.recordSlots(metricsScope, 0, expired);
      return isDone;
    } finally {
      wakeSlotWaiters(subject);
    }
  }

  /**
   * Sleeps `delayMs`, or until `wake` is called through `onWake`, or rejects when `signal`
   * aborts.
   */
  function sleep(
    scope: string,
    delayMs: number,
    signal: AbortSignal | undefined,
    onWake?: (wake: () => void) => () => void,
  ): Promise<void> {
    return new Promise((resolve, reject) => {
      let stopWaking: (() => void) | undefined;
      const finish = () => {
        timer.cancel();
        signal?.removeEventListener("abort", onAbort);
        stopWaking?.();
      };
      const onAbort = () => {
        finish();
        reject(abortError(scope, signal));
      };
      const timer = timers.setTimer(
        () => {
          finish();
          resolve();
        },
        Math.max(0, delayMs),
      );
      signal?.addEventListener("abort", onAbort, { once: true });
      stopWaking = onWake?.(() => {
        finish();
        resolve();
      });
    });
  }

  function abortError(scope: string, signal: AbortSignal | undefined): OutboundError {
    return new OutboundError("aborted", scope, "the wait was aborted; nothing was charged", {
      cause: signal?.reason,
    });
  }

  function invalid(scope: string, message: string): OutboundError {
    return new OutboundError("invalid-argument", scope, message);
  }

  function budgetOf(scope: string): TOutboundBudget {
    if (typeof scope !== "string") {
      throw new OutboundError(
        "invalid-argument",
        String(scope),
        `scope must be text, not ${describe(scope)}`,
      );
    }
    const name = parseOutboundScope(scope);
    const published = name === null ? null : (policy?.outboundBudget(name) ?? null);
    const nowMs = clock.nowMs();
    // A raise in force replaces the limit and the cap; past its expiry, the budget's own again.
    const budget =
      published !== null
        ? fromPublished(outboundBudgetAt(published, nowMs))
        : name === null
          ? undefined
          : budgets.get(name);
    const shownScope = scope.length > 80 ? `${scope.slice(0, 80)}...` : scope;
    if (budget === undefined) {
      const known = [...budgets.keys()].map((item) => `outbound:${item}`).join(", ") || "none";
      throw new OutboundError(
        "unknown-scope",
        shownScope,
        `no outbound budget has this scope (known: ${known}${policy === undefined ? "" : "; nor has the policy in force"})`,
      );
    }
    return outboundBudgetAt(budget, nowMs);
  }

  function subjectOf(budget: TOutboundBudget, key: string): string {
    return `o:${budget.name}:${key}`;
  }

  function checkKey(scope: string, budget: TOutboundBudget, key: unknown): void {
    const keyProblem = outboundKeyProblem(budget.keyBy, key);
    if (keyProblem !== null) throw invalid(scope, keyProblem);
  }

  function check(
    scope: string,
    acquireOptions: AcquireOptions | undefined,
  ): {
    scope: string;
    budget: TOutboundBudget;
    key: string;
    cost: number;
    maxWaitMs: number;
    signal: AbortSignal | undefined;
  } {
    const budget = budgetOf(scope);
    const { key = "", cost = 1, signal, maxWaitMs = budget.maxWaitMs } = acquireOptions ?? {};
    checkKey(scope, budget, key);
    if (typeof cost !== "number" || !Number.isInteger(cost) || cost < 1 || cost > MAX_COST) {
      throw invalid(
        scope,
        `cost must be a whole number from 1 to ${MAX_COST}, not ${describe(cost)}`,
      );
    }
    if (typeof maxWaitMs !== "number" || !Number.isFinite(maxWaitMs) || maxWaitMs < 0) {
      throw invalid(
        scope,
        `maxWaitMs must be a finite number of ms from 0, not ${describe(maxWaitMs)}`,
      );
    }
    if (maxWaitMs > budget.maxWaitMs) {
      throw invalid(
        scope,
        `maxWaitMs must be at most the budget's maxWaitMs ${budget.maxWaitMs}, not ${maxWaitMs}`,
      );
    }
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      throw invalid(scope, `signal must be an AbortSignal, not ${describe(signal)}`);
    }
    return { scope, budget, key, cost, maxWaitMs, signal };
  }

  async function takeSlot(
    scope: string,
    metricsScope: string,
    subject: string,
    max: number,
    ttlMs: number,
    holder: string,
    deadlineMs: number,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    for (;;) {
      if (signal?.aborted) throw abortError(scope, signal);
      const reply = await store.takeSlot(subject, max, ttlMs, holder);
      metrics?.recordSlots(metricsScope, reply.isTaken ? reply.held : 0, reply.expired);
      if (reply.isTaken) return;
      const leftMs = deadlineMs - timers.nowMs();
      if (leftMs <= 0) {
        throw new OutboundError(
          "max-wait",
          scope,
          `all ${max} concurrency slots stayed taken for the whole wait; nothing was charged`,
          { retryAfterMs: Math.max(0, reply.expiresInMs) },
        );
      }
      const pollMs = SLOT_POLL_MIN_MS + random() * SLOT_POLL_SPREAD_MS;
      const delayMs = Math.min(pollMs, Math.max(1, reply.expiresInMs + 1), leftMs);
      await sleep(scope, delayMs, signal, (wake) => {
        let waiters = slotWaiters.get(subject);
        if (waiters === undefined) {
          waiters = new Set();
          slotWaiters.set(subject, waiters);
        }
        waiters.add(wake);
        return () => {
          waiters.delete(wake);
          if (waiters.size === 0) slotWaiters.delete(subject);
        };
      });
    }
  }

  function makePermit(
    scope: string,
    metricsScope: string,
    key: string,
    subject: string,
    turnAtMs: number | null,
    waitedMs: number,
    slot: { ttlMs: number; holder: string } | null,
  ): OutboundPermit {
    /** Released, or detached: this permit no longer owns the slot. */
    let isReleased = false;
    let isLost = false;
    let renewal: TimerHandle | undefined;
    const renew = () => {
      if (slot === null || isReleased || isClosed) return;
      renewal = renewalTimers.setTimer(() => {
        if (renewal !== undefined) renewals.delete(renewal);
        if (isReleased || isClosed) return;
        store.renewSlot(subject, slot.ttlMs, slot.holder).then(
          ({ isDone, expired }) => {
            metrics?.recordSlots(metricsScope, 0, expired);
            if (isDone) renew();
            else isLost = true;
          },
          // A failed renewal is retried at the next third: the slot outlives two failures.
          () => renew(),
        );
      }, slot.ttlMs / 3);
      renewals.add(renewal);
    };
    if (isRenewing) renew();
    const stopRenewing = () => {
      isReleased = true;
      if (renewal !== undefined) {
        renewal.cancel();
        renewals.delete(renewal);
      }
    };
    return {
      scope,
      key,
      turnAtMs,
      waitedMs,
      hasSlot: slot !== null,
      isSlotLost: () => isLost,
      async release() {
        if (slot === null || isReleased) return false;
        stopRenewing();
        return await freeSlotOf(metricsScope, subject, slot.holder);
      },
      detachSlot() {
        if (slot === null || isReleased) return null;
        stopRenewing();
        return { id: slot.holder, ttlMs: slot.ttlMs };
      },
    };
  }

  async function acquire(scope: string, acquireOptions?: AcquireOptions): Promise<OutboundPermit> {
    const checked = check(scope, acquireOptions);
    if (isClosed) throw invalid(checked.scope, "the outbound limiter is closed");
    if (metrics === null) return acquireChecked(checked, "");
    const metricsScope = `outbound:${checked.budget.name}`;
    try {
      const permit = await acquireChecked(checked, metricsScope);
      metrics.recordCall(metricsScope, permit.waitedMs);
      return permit;
    } catch (error: unknown) {
      if (
        error instanceof OutboundError &&
        (error.code === "max-wait" || error.code === "aborted")
      ) {
        metrics.recordWaitEnded(metricsScope, error.code);
      }
      throw error;
    }
  }

  async function acquireChecked(
    checked: ReturnType<typeof check>,
    metricsScope: string,
  ): Promise<OutboundPermit> {
    const { budget, key, cost, signal } = checked;
    if (signal?.aborted) throw abortError(checked.scope, signal);
    const startMs = timers.nowMs();
    const deadlineMs = startMs + checked.maxWaitMs;
    const subject = subjectOf(budget, key);

    let slot: { ttlMs: number; holder: string } | null = null;
    if (budget.concurrency !== null) {
      const holder = randomBytes(12).toString("hex");
      const ttlMs = budget.concurrency.slotTtlMs;
      await takeSlot(
        checked.scope,
        metricsScope,
        subject,
        budget.concurrency.max,
        ttlMs,
        holder,
        deadlineMs,
        signal,
      );
      slot = { ttlMs, holder };
    }
    const freeSlot = async () => {
      if (slot !== null) await freeSlotOf(metricsScope, subject, slot.holder).catch(() => false);
    };

    if (budget.limit === null) {
      return makePermit(
        checked.scope,
        metricsScope,
        key,
        subject,
        null,
        timers.nowMs() - startMs,
        slot,
      );
    }
    let turn: Awaited<ReturnType<RedisOutboundStore["takeTurn"]>>;
    try {
      if (signal?.aborted) throw abortError(checked.scope, signal);
      const leftMs = Math.max(0, deadlineMs - timers.nowMs());
      turn = await store.takeTurn(subject, budget.limit, cost, leftMs);
    } catch (error: unknown) {
      await freeSlot();
      throw error;
    }
    if (turn.status === "cost") {
      await freeSlot();
      throw new OutboundError(
        "cost-exceeds-limit",
        checked.scope,
        `cost ${cost} exceeds what the limit can ever admit at once`,
      );
    }
    if (turn.status === "late") {
      await freeSlot();
      throw new OutboundError(
        "max-wait",
        checked.scope,
        `the earliest turn is ${Math.ceil(turn.waitMs)} ms away, past the wait of ${checked.maxWaitMs} ms; nothing was charged`,
        { retryAfterMs: Math.ceil(turn.waitMs) },
      );
    }
    if (turn.waitMs > 0) {
      try {
        await sleep(checked.scope, turn.waitMs, signal);
      } catch (error: unknown) {
        const id = randomBytes(8).toString("hex");
        await store.giveBackTurn(subject, turn.turnAtMs, cost, id).catch(() => false);
        await freeSlot();
        throw error;
      }
    }
    return makePermit(
      checked.scope,
      metricsScope,
      key,
      subject,
      turn.turnAtMs,
      timers.nowMs() - startMs,
      slot,
    );
  }

  async function schedule<T>(
    scope: string,
    key: string,
    call: (permit: OutboundPermit) => Promise<T>,
    scheduleOptions: ScheduleOptions = {},
  ): Promise<T> {
    const { retries = 0, isRetryable = () => true, ...acquireOptions } = scheduleOptions;
    if (typeof retries !== "number" || !Number.isInteger(retries) || retries < 0 || retries > 100) {
      throw invalid(
        scope,
        `retries must be a whole number from 0 to 100, not ${describe(retries)}`,
      );
    }
    if (typeof call !== "function") throw invalid(scope, "call must be a function");
    for (let attempt = 0; ; attempt++) {
      const permit = await acquire(scope, { ...acquireOptions, key });
      try {
        return await call(permit);
      } catch (error: unknown) {
        if (attempt >= retries || !isRetryable(error)) throw error;
      } finally {
        await permit.release();
      }
    }
  }

  /** The budget, subject and holder of a detached slot, checked. */
  function checkSlot(
    scope: string,
    key: string,
    slotId: string,
  ): { subject: string; holder: string; ttlMs: number; metricsScope: string } {
    const budget = budgetOf(scope);
    checkKey(scope, budget, key);
    if (typeof slotId !== "string" || !SLOT_ID_PATTERN.test(slotId)) {
      throw invalid(
        scope,
        `slot must be the id acquire gave (24 hex characters), not ${describe(slotId)}`,
      );
    }
    if (budget.concurrency === null) {
      throw invalid(scope, "slot: this budget has no concurrency cap, so it has no slots");
    }
    if (isClosed) throw invalid(scope, "the outbound limiter is closed");
    return {
      subject: subjectOf(budget, key),
      holder: slotId,
      ttlMs: budget.concurrency.slotTtlMs,
      metricsScope: metrics === null ? "" : `outbound:${budget.name}`,
    };
  }

  async function renewSlot(
    scope: string,
    key: string,
    slotId: string,
  ): Promise<OutboundSlot | null> {
    const { subject, holder, ttlMs, metricsScope } = checkSlot(scope, key, slotId);
    const { isDone, expired } = await store.renewSlot(subject, ttlMs, holder);
    metrics?.recordSlots(metricsScope, 0, expired);
    return isDone ? { id: holder, ttlMs } : null;
  }

  async function releaseSlot(scope: string, key: string, slotId: string): Promise<boolean> {
    const { subject, holder, metricsScope } = checkSlot(scope, key, slotId);
    return await freeSlotOf(metricsScope, subject, holder);
  }

  return {
    acquire,
    schedule,
    renewSlot,
    releaseSlot,
    budgetOf,
    flush,
    close() {
      isClosed = true;
      flusher?.cancel();
      for (const renewal of renewals) renewal.cancel();
      renewals.clear();
    },
  };
}
