/**
 * Keeps an enforcer on the newest good policy, applying it change by change:
 *
 * - at start, subscribes to `${prefix}policy:announce`, then loads the published policy: the
 *   head's snapshot (read in pages) and the deltas logged after it;
 * - each announcement carries its version's delta (when small): applied at once when its base is
 *   the version in force, so a raise costs every enforcer what it changes, not the policy's size;
 * - a gap (an announcement whose base is ahead of the version in force: one was missed) is filled
 *   from the log (`{policy}:deltas`); when the log cannot fill it (trimmed, or a version that went
 *   out as a whole snapshot), the enforcer resyncs: it loads the head's snapshot and the deltas
 *   after it, and swaps the result in only when all of it checked out;
 * - every `pollIntervalMs`, compares the head's version with the one in force (one HGET), which
 *   heals announcements missed while the subscriber was reconnecting; a reconnect (to the same
 *   Redis, or to a replica promoted by a failover) reads the head at once;
 * - a head at the version in force but with another checksum means this enforcer cannot prove it
 *   holds what Redis publishes: it resyncs from the head's snapshot. A head behind the version in
 *   force (a failover lost the last writes) is logged and the version in force kept, until the
 *   control plane publishes again (docs/failover.md).
 *
 * Every delta and every snapshot is validated (`PolicyState`: shapes, references, base version
 * and checksum, and the checksum the changes must produce); a bad one is refused, counted once,
 * reported (last message, version, time) and logged once, and the last good policy stays in
 * force. Versions only move forward: an older or equal version is never applied, whatever Redis
 * holds.
 *
 * A head of another Redis protocol version (`protocol.ts`) is refused with a `RedisProtocolError`
 * naming both versions (`protocolError`; `Enforcer.start` throws it when it is found at start).
 *
 * Reads are serialised: one at a time, and a trigger that arrives during a read causes exactly one
 * more read after it, so a burst of announcements costs two reads, not one per message.
 */
import { type Clock, wallClock as defaultWallClock } from "../limiter/clock";
import { systemTimers, type TimerHandle, type Timers } from "../limiter/timers";
import type { Sha256Bytes } from "../policy/binary-snapshot";
import type { Sha256Hex } from "../policy/entries";
import { formatFieldErrors, type PolicyFieldError } from "../policy/errors";
import { parsePolicyDelta } from "../policy/policy-delta";
import { PolicyState, type PolicyStateOptions, type PolicyStateSize } from "../policy/policy-state";
import type { PreparedSnapshot } from "../policy/prepare";
import type { TSnapshot, TSnapshotOutboundBudget } from "../policy/schemas";
import { parseSnapshot } from "../policy/snapshot";
import { policyRedisNames } from "../publication/keys";
import { RedisProtocolError } from "../publication/protocol";
import {
  loadPolicySnapshot,
  type PolicyHead,
  type PolicyReadingRedis,
  parsePolicyAnnouncement,
  readPolicyDeltas,
  readPolicyHead,
} from "../publication/read-policy";
import { describeError, type EnforcerLogger } from "./logger";

/** The commands the follower reads with (a `control` client). */
export type FollowerRedis = PolicyReadingRedis;

/** The subscriber connection (a `subscriber` client): only used for the announce channel. */
export interface FollowerSubscriber {
  subscribe(channel: string): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  on(event: "message", listener: (channel: string, message: string) => void): unknown;
  on(event: "ready", listener: () => void): unknown;
  off(event: "message", listener: (channel: string, message: string) => void): unknown;
  off(event: "ready", listener: () => void): unknown;
}

/** What triggered the read that applied a snapshot. */
export type SnapshotTrigger =
  | "bootstrap"
  | "cache"
  | "startup"
  | "announcement"
  | "poll"
  | "reconnect";

/** The policy in force and when it came. */
export interface AppliedSnapshot {
  readonly version: number;
  /** The checksum of the policy's entry set (`@limitplane/enforcer/policy` entries). */
  readonly checksum: string;
  /**
   * How it was reached: `delta` (applied onto the version before), `snapshot` (loaded whole, then
   * the log's deltas), `bootstrap`, `cache` (the last good policy saved on disk,
   * `controlPlane.policyCache`: in force until Redis provides the live one, whatever its version).
   */
  readonly via: "delta" | "snapshot" | "bootstrap" | "cache";
  /** Wall clock, epoch ms, when this enforcer applied it. */
  readonly appliedAtMs: number;
  /** Redis's clock when it was published; null for a bootstrap or cached snapshot. */
  readonly publishedAtMs: number | null;
  /** Wall clock, epoch ms, when the cached policy in force was saved; null unless `via: "cache"`. */
  readonly savedAtMs: number | null;
  readonly trigger: SnapshotTrigger;
}

/** Refused snapshots: counted once per refused version and message. */
export interface SnapshotErrorReport {
  readonly count: number;
  readonly lastMessage: string | null;
  /** The version the refused snapshot claimed, when it could be read. */
  readonly lastVersion: number | null;
  /** Wall clock, epoch ms. */
  readonly lastAtMs: number | null;
}

export interface PolicyFollowerOptions {
  readonly redis: FollowerRedis;
  readonly subscriber: FollowerSubscriber;
  /** REDIS_KEY_PREFIX. */
  readonly prefix: string;
  /**
   * How often the stored version is compared with the applied one, to heal missed announcements.
   * One HGET per interval.
   * @default 2_000
   */
  readonly pollIntervalMs?: number;
  /**
   * A snapshot to enforce until Redis provides a newer one (e.g. one baked into the image), so a
   * gateway that starts while Redis is unreachable enforces a known policy from its first request.
   * Validated like any other; an invalid one throws at construction.
   * @default none
   */
  readonly bootstrapSnapshot?: TSnapshot | string;
  /**
   * Customers whose prepared rules are cached per generation (at most twice this many are held).
   * @default 10_000
   */
  readonly customerCacheSize?: number;
  /** The SHA-256 entries are hashed with (the same digests whatever the implementation). */
  readonly sha256Hex?: Sha256Hex;
  /** The SHA-256 a binary snapshot is checked with (the same digest whatever the implementation). */
  readonly sha256Bytes?: Sha256Bytes;
  readonly logger: EnforcerLogger;
  /** @default Date.now */
  readonly wallClock?: Clock;
  /** @default systemTimers */
  readonly timers?: Timers;
}

type AppliedListener = (applied: AppliedSnapshot) => void;
type RefusedListener = (errors: SnapshotErrorReport) => void;

export class PolicyFollower {
  readonly #redis: FollowerRedis;
  readonly #subscriber: FollowerSubscriber;
  readonly #prefix: string;
  readonly #channel: string;
  readonly #pollIntervalMs: number;
  readonly #stateOptions: PolicyStateOptions;
  readonly #logger: EnforcerLogger;
  readonly #wallClock: Clock;
  readonly #timers: Timers;
  readonly #listeners = new Set<AppliedListener>();
  readonly #refusedListeners = new Set<RefusedListener>();

  #state: PolicyState | null = null;
  /** The state in force came from the cache on disk: the first good live policy replaces it. */
  #isCached = false;
  #current: PreparedSnapshot | null = null;
  #applied: AppliedSnapshot | null = null;
  #errors: SnapshotErrorReport = { count: 0, lastMessage: null, lastVersion: null, lastAtMs: null };
  /** `version:message` of refusals already counted, so a poll does not recount them. */
  #refusedKeys = new Set<string>();
  /** The version last read from Redis, applied or refused: a poll reads again only when it moves. */
  #lastSeenVersionField: string | null = null;
  #isSourceDown = false;
  #protocolError: RedisProtocolError | null = null;
  /** The last head-behind situation logged (`head<inForce`), so a poll does not log it again. */
  #headBehindKey: string | null = null;
  #inFlight: Promise<void> | null = null;
  #isReadAgain = false;
  #againTrigger: SnapshotTrigger = "poll";
  #pollTimer: TimerHandle | null = null;
  #isStopped = false;
  #waiters: (() => void)[] = [];

  readonly #onMessage = (channel: string, message: string) => {
    if (channel !== this.#channel) return;
    const announcement = parsePolicyAnnouncement(message);
    const inForce = this.#state?.version ?? 0;
    if (!this.#isCached && announcement !== null && announcement.version <= inForce) return;
    if (
      announcement !== null &&
      announcement.delta !== null &&
      this.#state !== null &&
      !this.#isCached &&
      announcement.base === inForce &&
      this.#inFlight === null
    ) {
      // The common case: the next delta, inline. Applied now, without a read.
      this.#lastSeenVersionField = String(announcement.version);
      if (this.#applyDeltaInput(this.#state, announcement.delta, announcement.version)) {
        this.#afterApply("announcement", "delta", announcement.publishedAtMs);
        return;
      }
    }
    // A gap, a delta to read from the log, a refused delta, or an announcement of the format
    // before deltas (or malformed: it still means something was published): read and judge.
    void this.refresh("announcement");
  };

  readonly #onReady = () => {
    void this.refresh("reconnect");
  };

  constructor(options: PolicyFollowerOptions) {
    this.#redis = options.redis;
    this.#subscriber = options.subscriber;
    this.#prefix = options.prefix;
    this.#channel = policyRedisNames(options.prefix).announce;
    this.#pollIntervalMs = options.pollIntervalMs ?? 2_000;
    if (!(this.#pollIntervalMs >= 10)) {
      throw new RangeError(`pollIntervalMs must be at least 10, got ${this.#pollIntervalMs}`);
    }
    this.#stateOptions = {
      customerCacheSize: options.customerCacheSize,
      sha256Hex: options.sha256Hex,
      sha256Bytes: options.sha256Bytes,
    };
    this.#logger = options.logger;
    this.#wallClock = options.wallClock ?? defaultWallClock;
    this.#timers = options.timers ?? systemTimers;
    if (options.bootstrapSnapshot !== undefined) {
      const parsed = parseSnapshot(options.bootstrapSnapshot);
      if (!parsed.ok) {
        throw new TypeError(`bootstrapSnapshot is invalid: ${formatFieldErrors(parsed.errors)}`);
      }
      this.#swapIn(this.#stateOf(parsed.value), null, "bootstrap", "bootstrap");
    }
  }

  /**
   * Puts the policy saved on disk in force (`policy-cache.ts`), unless a policy already is (one
   * arrived from Redis meanwhile). The first good policy read from Redis replaces it, whatever its
   * version: the cache is a stand-in, never a reason to keep an older live one out. False when
   * another policy was in force.
   */
  adoptCached(state: PolicyState, savedAtMs: number): boolean {
    if (this.#state !== null || this.#isStopped) return false;
    this.#state = state;
    this.#isCached = true;
    this.#afterApply("cache", "cache", null, savedAtMs);
    return true;
  }

  /** The policy in force as a binary snapshot with its version (for the cache); null before one. */
  binarySnapshot(): { readonly bytes: Uint8Array; readonly version: number } | null {
    const state = this.#state;
    return state === null ? null : { bytes: state.toBinary(), version: state.version };
  }

  /** The policy in force, prepared for resolution; null until the first one is applied. */
  get current(): PreparedSnapshot | null {
    return this.#current;
  }

  get applied(): AppliedSnapshot | null {
    return this.#applied;
  }

  get errors(): SnapshotErrorReport {
    return this.#errors;
  }

  /** Set while the head Redis holds is of another protocol version than this release's. */
  get protocolError(): RedisProtocolError | null {
    return this.#protocolError;
  }

  /** What the policy in force holds (entries, overrides, prepared customers); null before one. */
  get size(): PolicyStateSize | null {
    return this.#state?.size ?? null;
  }

  /** Outbound budget `name` in the policy in force; null when it has none (or no policy yet). */
  outboundBudget(name: string): TSnapshotOutboundBudget | null {
    return this.#state?.outboundBudget(name) ?? null;
  }

  /** Calls `listener` after every version applied from now on. Returns the unsubscribe. */
  onApplied(listener: AppliedListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Calls `listener` after every refusal from now on. Returns the unsubscribe. */
  onRefused(listener: RefusedListener): () => void {
    this.#refusedListeners.add(listener);
    return () => this.#refusedListeners.delete(listener);
  }

  /**
   * Subscribes, reads the published policy once, and starts polling. Never throws because Redis
   * is unreachable: the subscription and the poll keep trying, and the caller decides how long to
   * wait for a first policy (`waitForSnapshot`). Waits for the subscription at most
   * `subscribeWaitMs`, so that an announcement published right after the first read is not missed.
   */
  async start(subscribeWaitMs: number): Promise<void> {
    this.#subscriber.on("message", this.#onMessage);
    const subscribed = this.#subscriber.subscribe(this.#channel).then(
      () => true,
      (error: unknown) => {
        this.#logger.log("warn", "could not subscribe to policy announcements", {
          channel: this.#channel,
          error: describeError(error),
        });
        return false;
      },
    );
    await Promise.race([subscribed, this.#delay(subscribeWaitMs)]);
    await this.refresh("startup");
    // From now on, a (re)connection of the subscriber may have missed announcements: read again.
    this.#subscriber.on("ready", this.#onReady);
    this.#schedulePoll();
  }

  /** Resolves true once a policy is in force, or false after `timeoutMs`. */
  waitForSnapshot(timeoutMs: number): Promise<boolean> {
    if (this.#current !== null) return Promise.resolve(true);
    return new Promise((resolve) => {
      let isDone = false;
      const waiter = () => {
        if (isDone) return;
        isDone = true;
        timer.cancel();
        resolve(true);
      };
      const timer = this.#timers.setTimer(() => {
        if (isDone) return;
        isDone = true;
        this.#waiters = this.#waiters.filter((other) => other !== waiter);
        resolve(this.#current !== null);
      }, timeoutMs);
      this.#waiters.push(waiter);
    });
  }

  /** Reads what Redis holds and catches up to it if it is good and newer. Never throws. */
  refresh(trigger: SnapshotTrigger): Promise<void> {
    if (this.#isStopped) return Promise.resolve();
    if (this.#inFlight !== null) {
      this.#isReadAgain = true;
      this.#againTrigger = trigger;
      return this.#inFlight;
    }
    const run = async () => {
      let next: SnapshotTrigger = trigger;
      for (;;) {
        this.#isReadAgain = false;
        await this.#readOnce(next);
        if (!this.#isReadAgain || this.#isStopped) return;
        next = this.#againTrigger;
      }
    };
    this.#inFlight = run().finally(() => {
      this.#inFlight = null;
    });
    return this.#inFlight;
  }

  /** Stops polling and unsubscribes. Does not close the clients (the caller owns them). */
  async stop(): Promise<void> {
    this.#isStopped = true;
    this.#pollTimer?.cancel();
    this.#pollTimer = null;
    this.#subscriber.off("message", this.#onMessage);
    this.#subscriber.off("ready", this.#onReady);
    await this.#inFlight;
    await Promise.race([
      this.#subscriber.unsubscribe(this.#channel).catch(() => undefined),
      this.#delay(500),
    ]);
  }

  async #readOnce(trigger: SnapshotTrigger): Promise<void> {
    try {
      const read = await readPolicyHead(this.#redis, this.#prefix);
      this.#sourceUp();
      this.#protocolError = null;
      switch (read.status) {
        case "none":
          return;
        case "protocol":
          this.#lastSeenVersionField = "(another protocol)";
          this.#protocolError = new RedisProtocolError({
            storedVersion: read.storedVersion,
            keyPrefix: this.#prefix,
            reader: "enforcer",
          });
          this.#refuse(null, this.#protocolError.message);
          return;
        case "invalid":
          this.#lastSeenVersionField = "(unreadable)";
          this.#refuse(null, formatFieldErrors(read.errors));
          return;
        case "ok":
          this.#lastSeenVersionField = String(read.head.version);
          await this.#catchUp(read.head, trigger);
          return;
        default: {
          const unknown: never = read;
          throw new TypeError(`unknown head read: ${JSON.stringify(unknown)}`);
        }
      }
    } catch (error: unknown) {
      // The version seen was not caught up to: the next poll must read again, not skip it as seen
      // (a snapshot read that timed out would otherwise wait for the next publication).
      this.#lastSeenVersionField = null;
      this.#sourceDown(error);
    }
  }

  /** Brings the policy in force up to `head`: through the log when it can, else by a resync. */
  async #catchUp(head: PolicyHead, trigger: SnapshotTrigger): Promise<void> {
    const state = this.#state;
    if (state !== null && this.#isCached) {
      if (head.version === state.version && head.checksum === state.checksum) {
        // Redis publishes what the cache held: it is now the live policy, unchanged.
        this.#afterApply(trigger, "snapshot", head.publishedAtMs);
        return;
      }
      // Another version: loaded whole, never as deltas onto the cached set (whose history Redis
      // may not share), and in force whatever its version (a Redis emptied and republished from
      // the database may be behind the cache): the live policy wins.
      await this.#resync(head, trigger, true);
      return;
    }
    if (state !== null && head.version === state.version && head.checksum !== state.checksum) {
      // The same version with another set: this enforcer cannot prove it holds what Redis
      // publishes (a promoted replica with another history). The snapshot decides.
      await this.#resync(head, trigger, true);
      return;
    }
    if (state !== null && head.version < state.version) {
      this.#headBehind(head.version, state.version);
      return;
    }
    if (state !== null && head.version <= state.version) return;
    if (state !== null && state.version >= head.snapshotVersion) {
      const texts = await readPolicyDeltas(
        this.#redis,
        this.#prefix,
        state.version + 1,
        head.version,
      );
      if (texts.every((text) => text !== null)) {
        const before = state.version;
        const isApplied = this.#applyLogged(state, texts, state.version + 1);
        if (state.version > before) this.#afterApply(trigger, "delta", head.publishedAtMs);
        if (isApplied) return;
      }
    }
    await this.#resync(head, trigger);
  }

  /** Loads the head's snapshot and the deltas after it; swaps it in only if all of it checks out. */
  async #resync(head: PolicyHead, trigger: SnapshotTrigger, isSameVersion = false): Promise<void> {
    const loaded = await loadPolicySnapshot(this.#redis, this.#prefix, head, this.#stateOptions);
    if (loaded.status === "invalid") {
      this.#refuse(head.snapshotVersion, formatFieldErrors(loaded.errors));
      return;
    }
    const state = loaded.state;
    if (head.version > state.version) {
      const texts = await readPolicyDeltas(
        this.#redis,
        this.#prefix,
        state.version + 1,
        head.version,
      );
      const missing = texts.indexOf(null);
      if (missing >= 0) {
        this.#refuse(
          state.version + missing + 1,
          `delta ${state.version + missing + 1} is missing from the log after snapshot ${state.version}`,
        );
        return;
      }
      if (!this.#applyLogged(state, texts, state.version + 1)) return;
    }
    const isNewer = this.#state === null || this.#isCached || state.version > this.#state.version;
    if (!isNewer && !(isSameVersion && state.version === this.#state?.version)) return;
    this.#swapIn(state, head.publishedAtMs, trigger, "snapshot");
  }

  /** Applies logged deltas (versions `first`...) onto `state` in order; false at the first refusal. */
  #applyLogged(state: PolicyState, texts: readonly (string | null)[], first: number): boolean {
    for (const [index, text] of texts.entries()) {
      const version = first + index;
      if (version <= state.version) continue;
      if (text === null || !this.#applyDeltaInput(state, text, version)) return false;
    }
    return true;
  }

  /** Parses and applies one delta onto `state`; refuses it (state unchanged) when it is bad. */
  #applyDeltaInput(state: PolicyState, input: unknown, version: number): boolean {
    const parsed = parsePolicyDelta(input);
    if (!parsed.ok) {
      this.#refuse(version, formatFieldErrors(parsed.errors));
      return false;
    }
    if (parsed.value.version !== version) {
      this.#refuse(
        version,
        `the log's delta ${version} says it is version ${parsed.value.version}`,
      );
      return false;
    }
    const applied = state.applyDelta(parsed.value);
    if (!applied.ok) {
      this.#refuse(version, formatFieldErrors(applied.errors as PolicyFieldError[]));
      return false;
    }
    return true;
  }

  #stateOf(snapshot: TSnapshot): PolicyState {
    return PolicyState.fromSnapshot(snapshot, this.#stateOptions);
  }

  #swapIn(
    state: PolicyState,
    publishedAtMs: number | null,
    trigger: SnapshotTrigger,
    via: AppliedSnapshot["via"],
  ): void {
    this.#state = state;
    this.#afterApply(trigger, via, publishedAtMs);
  }

  #afterApply(
    trigger: SnapshotTrigger,
    via: AppliedSnapshot["via"],
    publishedAtMs: number | null,
    savedAtMs: number | null = null,
  ): void {
    const state = this.#state;
    if (state === null) return;
    if (via !== "cache") this.#isCached = false;
    const previous = this.#applied;
    this.#current = state.prepared();
    this.#applied = {
      version: state.version,
      checksum: state.checksum,
      via,
      appliedAtMs: this.#wallClock.nowMs(),
      publishedAtMs,
      savedAtMs,
      trigger,
    };
    this.#logger.log("info", "policy snapshot applied", {
      version: state.version,
      previousVersion: previous?.version ?? null,
      trigger,
      via,
      policy: describeAppliedPolicy(this.#applied),
    });
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const waiter of waiters) waiter();
    for (const listener of this.#listeners) {
      try {
        listener(this.#applied);
      } catch (error: unknown) {
        this.#logger.log("error", "a policy-applied listener threw", {
          error: describeError(error),
        });
      }
    }
  }

  #refuse(version: number | null, message: string): void {
    const key = `${version ?? "?"}:${message}`;
    if (this.#refusedKeys.has(key)) return;
    // Bounded: one entry per distinct refused version, and versions only move forward.
    if (this.#refusedKeys.size >= 100) this.#refusedKeys.clear();
    this.#refusedKeys.add(key);
    this.#errors = {
      count: this.#errors.count + 1,
      lastMessage: message,
      lastVersion: version,
      lastAtMs: this.#wallClock.nowMs(),
    };
    this.#logger.log("error", "policy snapshot refused; keeping the last good one", {
      refusedVersion: version,
      keptVersion: this.#state?.version ?? null,
      error: message,
    });
    for (const listener of this.#refusedListeners) {
      try {
        listener(this.#errors);
      } catch (error: unknown) {
        this.#logger.log("error", "a policy-refused listener threw", {
          error: describeError(error),
        });
      }
    }
  }

  /**
   * Redis holds an older head than the version in force: writes were lost (a failover to a replica
   * that had not received them, or a restart without persistence). The version in force came from
   * the control plane and stays; the worker republishes the latest version (republish-latest.ts),
   * and a newer one is applied as usual. Logged once per version pair.
   */
  #headBehind(headVersion: number, inForce: number): void {
    const key = `${headVersion}<${inForce}`;
    if (this.#headBehindKey === key) return;
    this.#headBehindKey = key;
    this.#logger.log("warn", "Redis's policy head is behind the version in force; keeping it", {
      headVersion,
      keptVersion: inForce,
    });
  }

  #sourceDown(error: unknown): void {
    if (this.#isSourceDown) return;
    this.#isSourceDown = true;
    this.#logger.log("warn", "cannot read the policy from Redis; keeping the current one", {
      keptVersion: this.#state?.version ?? null,
      error: describeError(error),
    });
  }

  #sourceUp(): void {
    if (!this.#isSourceDown) return;
    this.#isSourceDown = false;
    this.#logger.log("info", "policy source reachable again");
  }

  #schedulePoll(): void {
    if (this.#isStopped) return;
    this.#pollTimer = this.#timers.setTimer(() => {
      void this.#poll().finally(() => this.#schedulePoll());
    }, this.#pollIntervalMs);
  }

  async #poll(): Promise<void> {
    let field: string | null;
    try {
      const names = policyRedisNames(this.#prefix);
      field = await this.#redis.hget(names.head, "version");
    } catch (error: unknown) {
      this.#sourceDown(error);
      return;
    }
    this.#sourceUp();
    if (field === null || field === this.#lastSeenVersionField) return;
    await this.refresh("poll");
  }

  #delay(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.#timers.setTimer(resolve, ms);
    });
  }
}

/**
 * The policy in force in words, as heartbeats, status pages and logs say it: `none`,
 * `cached (version 7, saved at 2026-12-06T00:40:00.000Z)`, or `version 7`.
 */
export function describeAppliedPolicy(applied: AppliedSnapshot | null): string {
  if (applied === null) return "none";
  if (applied.via === "cache") {
    const savedAt = applied.savedAtMs === null ? "?" : new Date(applied.savedAtMs).toISOString();
    return `cached (version ${applied.version}, saved at ${savedAt})`;
  }
  return `version ${applied.version}`;
}
