/**
 * The customers this gateway sees, reported to Redis for the console (layout and bounds in
 * `../publication/seen-customers.ts`). Only identified customers are recorded: the enforcer calls
 * {@link SeenCustomers.record} with the id its gateway's `identify` returned, never an address.
 *
 * Bounded per wall-clock hour: at most `maxCustomersPerHour` distinct customers and
 * `maxTiersPerCustomer` tiers each; further sightings are only counted (`overflowCount`, written
 * to `seen:overflow:<hour>`), so hostile API keys cannot grow this process, Redis or the console.
 * A customer already reported is re-reported at most every `reportIntervalMs`, so the cost per
 * request is one map lookup and the Redis writes per flush are bounded by the cap.
 */
import type { ChainableCommander } from "ioredis";
import type { Clock } from "../limiter/clock";
import { isCustomerId, isName } from "../policy/names";
import type { RedisClient } from "../publication/redis-clients";
import {
  NO_TIER_FIELD,
  SEEN_CUSTOMERS_KEPT,
  SEEN_OVERFLOW_TTL_MS,
  SEEN_RETENTION_MS,
  seenCustomerNames,
} from "../publication/seen-customers";
import { describeError, type EnforcerLogger } from "./logger";

export interface SeenCustomersOptions {
  /**
   * Distinct customers reported per wall-clock hour; beyond it, sightings are only counted.
   * @default 1_000
   */
  readonly maxCustomersPerHour?: number;
  /** Distinct tiers reported per customer and hour. @default 4 */
  readonly maxTiersPerCustomer?: number;
  /** How often a customer seen again is reported again. @default 60_000 */
  readonly reportIntervalMs?: number;
}

export interface SeenCustomersRuntimeOptions extends SeenCustomersOptions {
  readonly wallClock: Clock;
}

/** A sighting waiting for the flush. */
export interface SeenSighting {
  readonly customerId: string;
  /** The hash field: the tier name, or `-`. */
  readonly tierField: string;
  readonly atMs: number;
}

const HOUR_MS = 3_600_000;

/** A tier a customer was reported with this hour. */
interface ReportedTier {
  /** As given to `record` (`""` for none). */
  readonly tier: string;
  lastMs: number;
}

function wholeAtLeastOne(name: string, value: number): number {
  if (!(Number.isInteger(value) && value >= 1)) {
    throw new RangeError(`seenCustomers.${name} must be a whole number >= 1, got ${value}`);
  }
  return value;
}

export class SeenCustomers {
  readonly #maxCustomers: number;
  readonly #maxTiers: number;
  readonly #reportIntervalMs: number;
  readonly #wallClock: Clock;
  #hour = -1;
  /**
   * This hour's reported customers: per customer id, each tier it was reported with (as given,
   * `""` for none) and when that pair was last queued. Keyed by the id as it arrives, so the hot
   * path (a pair already vetted this hour) builds no string.
   */
  readonly #reported = new Map<string, ReportedTier[]>();
  /** Pending sightings, by customer id, then by tier field. */
  readonly #pending = new Map<string, Map<string, SeenSighting>>();
  #pendingCount = 0;
  #overflowThisHour = 0;
  #overflowPending = 0;
  #overflowPendingHour = -1;

  constructor(options: SeenCustomersRuntimeOptions) {
    this.#maxCustomers = wholeAtLeastOne(
      "maxCustomersPerHour",
      options.maxCustomersPerHour ?? 1_000,
    );
    this.#maxTiers = wholeAtLeastOne("maxTiersPerCustomer", options.maxTiersPerCustomer ?? 4);
    this.#reportIntervalMs = wholeAtLeastOne(
      "reportIntervalMs",
      options.reportIntervalMs ?? 60_000,
    );
    this.#wallClock = options.wallClock;
  }

  /** Sightings not reported this hour because a cap was reached. */
  get overflowCount(): number {
    return this.#overflowThisHour;
  }

  /** Sightings waiting for the flush (at most the hour's cap). */
  get pendingCount(): number {
    return this.#pendingCount;
  }

  /**
   * Notes that `customerId` (as `identify` returned it) sent a request with `tier`. Invalid ids
   * are never reported; a tier that is not a tier name is reported as none. Never throws.
   * `wallNowMs`: the wall clock's reading, when the caller has read it already.
   *
   * The id is matched against the customer-id pattern only when it is about to be kept: past the
   * hour's cap every request of a customer not reported this hour comes here, and the pattern
   * was its largest cost. So past the cap an invalid id counts as an overflow sighting; the
   * enforcer records only ids its engine has accepted, so none reaches it there.
   */
  record(customerId: string, tier: string | null | undefined, wallNowMs?: number): void {
    const nowMs = wallNowMs ?? this.#wallClock.nowMs();
    const hour = Math.floor(nowMs / HOUR_MS);
    if (hour !== this.#hour) this.#startHour(hour);
    const given = tier ?? "";
    const tiers = this.#reported.get(customerId);
    if (tiers !== undefined) {
      for (const reported of tiers) {
        if (reported.tier !== given) continue;
        // The hot path: a pair already vetted this hour.
        if (nowMs - reported.lastMs < this.#reportIntervalMs) return;
        reported.lastMs = nowMs;
        this.#queue(customerId, given, nowMs);
        return;
      }
      if (tiers.length >= this.#maxTiers) {
        this.#countOverflow(hour);
        return;
      }
      tiers.push({ tier: given, lastMs: nowMs });
      this.#queue(customerId, given, nowMs);
      return;
    }
    if (this.#reported.size >= this.#maxCustomers) {
      this.#countOverflow(hour);
      return;
    }
    if (!isCustomerId(customerId)) return;
    this.#reported.set(customerId, [{ tier: given, lastMs: nowMs }]);
    this.#queue(customerId, given, nowMs);
  }

  #queue(customerId: string, tier: string, atMs: number): void {
    const field = tierField(tier);
    let byField = this.#pending.get(customerId);
    if (byField === undefined) {
      byField = new Map();
      this.#pending.set(customerId, byField);
    }
    if (!byField.has(field)) this.#pendingCount++;
    byField.set(field, { customerId, tierField: field, atMs });
  }

  #countOverflow(hour: number): void {
    this.#overflowThisHour++;
    this.#overflowPending++;
    this.#overflowPendingHour = hour;
  }

  #startHour(hour: number): void {
    this.#hour = hour;
    this.#reported.clear();
    this.#overflowThisHour = 0;
  }

  /** What to write, forgetting it. */
  drain(): {
    readonly sightings: readonly SeenSighting[];
    readonly overflow: { readonly hour: number; readonly count: number } | null;
  } {
    const sightings: SeenSighting[] = [];
    for (const byField of this.#pending.values()) {
      for (const sighting of byField.values()) sightings.push(sighting);
    }
    this.#pending.clear();
    this.#pendingCount = 0;
    const overflow =
      this.#overflowPending === 0
        ? null
        : { hour: this.#overflowPendingHour, count: this.#overflowPending };
    this.#overflowPending = 0;
    return { sightings, overflow };
  }
}

function tierField(tier: string | null | undefined): string {
  return typeof tier === "string" && isName(tier) ? tier : NO_TIER_FIELD;
}

export interface SeenCustomersReporterOptions {
  readonly redis: Pick<RedisClient, "status" | "multi">;
  readonly prefix: string;
  readonly enforcerId: string;
  readonly seen: SeenCustomers;
  readonly logger: EnforcerLogger;
}

/**
 * Writes what {@link SeenCustomers} collected. Never throws; skipped while the client is not
 * connected (the sightings wait, bounded by the hour's cap). One key per transaction (Redis
 * Cluster). A failed flush loses its sightings: they are reported again when seen again.
 */
export class SeenCustomersReporter {
  readonly #options: SeenCustomersReporterOptions;
  #isFailing = false;

  constructor(options: SeenCustomersReporterOptions) {
    this.#options = options;
  }

  async flush(): Promise<void> {
    const { redis, prefix, enforcerId, seen, logger } = this.#options;
    if (redis.status !== "ready") return;
    const { sightings, overflow } = seen.drain();
    if (sightings.length === 0 && overflow === null) return;
    const names = seenCustomerNames(prefix);
    const transactions: ChainableCommander[] = [];
    const scores: (string | number)[] = [];
    let latestMs = 0;
    for (const sighting of sightings) {
      const key = names.customer(sighting.customerId);
      transactions.push(
        redis
          .multi()
          .hset(key, sighting.tierField, String(sighting.atMs))
          .pexpire(key, SEEN_RETENTION_MS),
      );
      scores.push(sighting.atMs, sighting.customerId);
      latestMs = Math.max(latestMs, sighting.atMs);
    }
    if (scores.length > 0) {
      transactions.push(
        redis
          .multi()
          .zadd(names.customers, "GT", ...scores)
          .zremrangebyscore(names.customers, "-inf", latestMs - SEEN_RETENTION_MS)
          .zremrangebyrank(names.customers, 0, -(SEEN_CUSTOMERS_KEPT + 1)),
      );
    }
    if (overflow !== null) {
      const key = names.overflow(overflow.hour);
      transactions.push(
        redis.multi().hincrby(key, enforcerId, overflow.count).pexpire(key, SEEN_OVERFLOW_TTL_MS),
      );
    }
    try {
      const results = await Promise.allSettled(transactions.map((tx) => tx.exec()));
      for (const result of results) {
        if (result.status === "rejected") throw result.reason;
        const failed = result.value?.find(([error]) => error !== null);
        if (failed !== undefined) throw failed[0];
      }
      this.#isFailing = false;
    } catch (error: unknown) {
      if (!this.#isFailing) {
        this.#isFailing = true;
        logger.log("warn", "seen-customers report failed", { error: describeError(error) });
      }
    }
  }
}
