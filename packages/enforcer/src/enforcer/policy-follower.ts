/**
 * Keeps an enforcer on the newest good policy snapshot:
 *
 * - at start, subscribes to `${prefix}policy:announce` and reads `${prefix}policy:current`;
 * - on every announcement of a newer version, reads the hash again and applies what it holds;
 * - every `pollIntervalMs`, compares the stored version with what it last saw (one HGET), which
 *   heals announcements missed while the subscriber was reconnecting or the message was lost;
 * - after the subscriber reconnects, reads at once.
 *
 * Every snapshot is validated (`readCurrentSnapshot` of `@limitplane/enforcer/publication`: shape, references,
 * checksum, agreement with the hash's version and checksum); a bad one is
 * refused, counted once, reported (last message, version, time) and logged once, and the last
 * good snapshot stays in force. Versions only move forward: an older or equal version is never
 * applied, whatever Redis holds (a restored backup, a flushed and re-seeded Redis).
 *
 * Reads are serialised: one at a time, and a trigger that arrives during a read causes exactly one
 * more read after it, so a burst of announcements costs two reads, not one per message.
 */
import type { Clock } from "../limiter/clock";
import { formatFieldErrors } from "../policy/errors";
import { type PreparedSnapshot, prepareSnapshot } from "../policy/prepare";
import type { TSnapshot } from "../policy/schemas";
import { isNewerSnapshot, parseSnapshot } from "../policy/snapshot";
import { policyRedisNames } from "../publication/keys";
import {
  type CurrentSnapshotRead,
  parseAnnouncement,
  type ReadingRedis,
  readCurrentSnapshot,
} from "../publication/read-current-snapshot";
import { describeError, type EnforcerLogger } from "./logger";
import { wallClock as defaultWallClock } from "./metrics";
import { systemTimers, type TimerHandle, type Timers } from "./timers";

/** The commands the follower reads with (a `control` client). */
export interface FollowerRedis extends ReadingRedis {
  hget(key: string, field: string): Promise<string | null>;
}

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
export type SnapshotTrigger = "bootstrap" | "startup" | "announcement" | "poll" | "reconnect";

/** The snapshot in force and when it came. */
export interface AppliedSnapshot {
  readonly version: number;
  readonly checksum: string;
  /** Wall clock, epoch ms, when this enforcer applied it. */
  readonly appliedAtMs: number;
  /** Redis's clock when it was published; null for a bootstrap snapshot. */
  readonly publishedAtMs: number | null;
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
  readonly #logger: EnforcerLogger;
  readonly #wallClock: Clock;
  readonly #timers: Timers;
  readonly #listeners = new Set<AppliedListener>();
  readonly #refusedListeners = new Set<RefusedListener>();

  #current: PreparedSnapshot | null = null;
  #applied: AppliedSnapshot | null = null;
  #errors: SnapshotErrorReport = { count: 0, lastMessage: null, lastVersion: null, lastAtMs: null };
  /** `version:message` of refused snapshots already counted, so a poll does not recount them. */
  #refusedKeys = new Set<string>();
  /** The raw `version` field last read, applied or refused: a poll reads again only when it moves. */
  #lastSeenVersionField: string | null = null;
  #isSourceDown = false;
  #inFlight: Promise<void> | null = null;
  #isReadAgain = false;
  #againTrigger: SnapshotTrigger = "poll";
  #pollTimer: TimerHandle | null = null;
  #isStopped = false;
  #waiters: (() => void)[] = [];

  readonly #onMessage = (channel: string, message: string) => {
    if (channel !== this.#channel) return;
    const announcement = parseAnnouncement(message);
    // A malformed announcement still means "something was published": read and judge the hash.
    if (announcement !== null && !isNewerSnapshot(this.#current?.snapshot ?? null, announcement)) {
      return;
    }
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
    this.#logger = options.logger;
    this.#wallClock = options.wallClock ?? defaultWallClock;
    this.#timers = options.timers ?? systemTimers;
    if (options.bootstrapSnapshot !== undefined) {
      const parsed = parseSnapshot(options.bootstrapSnapshot);
      if (!parsed.ok) {
        throw new TypeError(`bootstrapSnapshot is invalid: ${formatFieldErrors(parsed.errors)}`);
      }
      this.#apply(parsed.value, null, "bootstrap");
    }
  }

  /** The snapshot in force, prepared for resolution; null until the first one is applied. */
  get current(): PreparedSnapshot | null {
    return this.#current;
  }

  get applied(): AppliedSnapshot | null {
    return this.#applied;
  }

  get errors(): SnapshotErrorReport {
    return this.#errors;
  }

  /** Calls `listener` after every snapshot applied from now on. Returns the unsubscribe. */
  onApplied(listener: AppliedListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Calls `listener` after every snapshot refused from now on. Returns the unsubscribe. */
  onRefused(listener: RefusedListener): () => void {
    this.#refusedListeners.add(listener);
    return () => this.#refusedListeners.delete(listener);
  }

  /**
   * Subscribes, reads the current snapshot once, and starts polling. Never throws because Redis is
   * unreachable: the subscription and the poll keep trying, and the caller decides how long to wait
   * for a first snapshot (`waitForSnapshot`). Waits for the subscription at most `subscribeWaitMs`,
   * so that an announcement published right after the first read is not missed.
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

  /** Resolves true once a snapshot is in force, or false after `timeoutMs`. */
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

  /** Reads the stored snapshot and applies it if it is good and newer. Never throws. */
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
    let read: CurrentSnapshotRead;
    try {
      read = await readCurrentSnapshot(this.#redis, this.#prefix);
    } catch (error: unknown) {
      this.#sourceDown(error);
      return;
    }
    this.#sourceUp();
    switch (read.status) {
      case "none":
        return;
      case "invalid": {
        this.#lastSeenVersionField = read.version === null ? "(unreadable)" : String(read.version);
        if (
          read.version !== null &&
          this.#current !== null &&
          read.version <= this.#current.version
        ) {
          return;
        }
        this.#refuse(read.version, formatFieldErrors(read.errors));
        return;
      }
      case "ok": {
        this.#lastSeenVersionField = String(read.snapshot.version);
        if (!isNewerSnapshot(this.#current?.snapshot ?? null, read.snapshot)) return;
        this.#apply(read.snapshot, read.publishedAtMs, trigger);
        return;
      }
      default: {
        const unknown: never = read;
        throw new TypeError(`unknown snapshot read: ${JSON.stringify(unknown)}`);
      }
    }
  }

  #apply(snapshot: TSnapshot, publishedAtMs: number | null, trigger: SnapshotTrigger): void {
    const previous = this.#applied;
    this.#current = prepareSnapshot(snapshot);
    this.#applied = {
      version: snapshot.version,
      checksum: snapshot.checksum,
      appliedAtMs: this.#wallClock.nowMs(),
      publishedAtMs,
      trigger,
    };
    this.#logger.log("info", "policy snapshot applied", {
      version: snapshot.version,
      previousVersion: previous?.version ?? null,
      trigger,
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
      keptVersion: this.#current?.version ?? null,
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

  #sourceDown(error: unknown): void {
    if (this.#isSourceDown) return;
    this.#isSourceDown = true;
    this.#logger.log("warn", "cannot read the policy from Redis; keeping the current one", {
      keptVersion: this.#current?.version ?? null,
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
      field = await this.#redis.hget(policyRedisNames(this.#prefix).current, "version");
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
