/**
 * A region's shares of its global limits (docs/regions.md, "Global budgets"), applied to the
 * decisions of one enforcer: a `global` tier limit or ceiling is decided with its capacity and
 * refill scaled by the share its region holds, read from the region's Redis by
 * {@link GlobalShareFollower} (one poll per interval, never one call per decision).
 *
 * - A share is used while its lease runs by the Redis's clock: the follower turns the lease's end
 *   into this process's monotonic clock at the instant it sent the read (the earlier instant, so
 *   the lease ends here no later than in Redis). After it, and before any share was read, the
 *   floor share applies.
 * - The demand of each global limit (units of cost of every request that reached it, admitted or
 *   rejected) is summed here and added to the region's counter by the follower's next poll.
 * - Global checks are never leased (`isGlobal`): a lease reserves units for its lifetime under the
 *   share of the moment, and a request it answers never reaches Redis, so a decrease would take
 *   a lease's lifetime to be in force instead of one poll.
 *
 * Scaled checks are made once per list of checks and share in force, frozen like the policy's, so
 * every customer of a tier and endpoint class is decided with the same list, as without global
 * limits: the caches keyed by a list, a check or a limit (the store's encoded arguments and checks
 * validated, the flood guard's, the leases', the `RateLimit-Policy` header) then work for global
 * limits too (a list per resolution missed each of them once per customer and share).
 *
 * Per decision this costs one WeakSet lookup and, for a resolution with a global limit, a
 * comparison of the clock with the next lease end, one WeakMap lookup and one Map update per
 * global check.
 */
import type { Clock } from "../limiter/clock";
import type { LimitSpec } from "../limiter/types";
import { MIN_RATE_PER_SEC } from "../policy/limit-math";
import type { Resolution, ResolvedCheck } from "../policy/resolve";
import {
  type GlobalBudgetRedisNames,
  globalBudgetRedisNames,
  parseGlobalShare,
} from "../publication/global-budget-keys";

/** One global limit's share as its region's Redis holds it. */
export interface GlobalShareReading {
  /** In [0, 1]. */
  readonly share: number;
  /** When the lease on `share` ends, by the Redis's clock (epoch ms). */
  readonly leaseExpiresAtMs: number;
  /** The share to use once the lease has ended. */
  readonly floorShare: number;
}

export interface GlobalBudgetsOptions {
  /**
   * The share used before any is read and after a lease ends without a reading carrying its own
   * floor: the reconciler's `GLOBAL_BUDGET_FLOOR_SHARE`.
   * @default 0.02
   */
  readonly floorShare?: number;
  /** This process's monotonic clock (what `nowMs` arguments are read from). */
  readonly clock: Clock;
}

interface HeldShare {
  readonly share: number;
  /** The lease's end on this process's monotonic clock. */
  readonly untilMs: number;
  readonly floorShare: number;
}

interface ScaledChecks {
  readonly generation: number;
  readonly checks: readonly ResolvedCheck[];
}

interface ScaledResolution {
  readonly generation: number;
  readonly resolution: Resolution;
}

export class GlobalBudgets {
  readonly #floorShare: number;
  readonly #clock: Clock;
  readonly #held = new Map<string, HeldShare>();
  /** The share in force per scope, as last worked out. */
  readonly #inForce = new Map<string, number>();
  /** When the next lease ends: the shares in force change then. */
  #nextChangeAtMs = Number.POSITIVE_INFINITY;
  /** Moves whenever a share in force changes: scaled resolutions of older ones are redone. */
  #generation = 0;
  /** A policy's check list (one per tier and endpoint class) with its global limits scaled. */
  readonly #scaledChecks = new WeakMap<readonly ResolvedCheck[], ScaledChecks>();
  readonly #scaled = new WeakMap<Resolution, ScaledResolution>();
  /** Check lists with no global check: their resolutions are returned as they are. */
  readonly #plain = new WeakSet<readonly ResolvedCheck[]>();
  /** Check lists holding a global check (never leased). */
  readonly #globalChecks = new WeakSet<readonly ResolvedCheck[]>();
  #demand = new Map<string, number>();

  constructor(options: GlobalBudgetsOptions) {
    const floorShare = options.floorShare ?? 0.02;
    if (!(floorShare >= 0 && floorShare <= 1)) {
      throw new RangeError(`globalBudgets.floorShare must be from 0 to 1, got ${floorShare}`);
    }
    this.#floorShare = floorShare;
    this.#clock = options.clock;
  }

  /**
   * Takes the shares read from Redis: `readings` by scope (null: no share written yet; undefined:
   * the read failed, what is held stays), read with the Redis's clock at `redisNowMs`, the read
   * sent at `sentAtMs` (this process's monotonic clock). Scopes not in `readings` are forgotten
   * (no longer global).
   */
  update(
    readings: ReadonlyMap<string, GlobalShareReading | null | undefined>,
    redisNowMs: number,
    sentAtMs: number,
  ): void {
    for (const scope of [...this.#held.keys()]) {
      if (!readings.has(scope)) this.#held.delete(scope);
    }
    for (const [scope, reading] of readings) {
      if (reading === undefined) continue;
      if (reading === null) {
        this.#held.delete(scope);
        continue;
      }
      this.#held.set(scope, {
        share: reading.share,
        untilMs: sentAtMs + (reading.leaseExpiresAtMs - redisNowMs),
        floorShare: reading.floorShare,
      });
    }
    this.#recompute(this.#clock.nowMs());
  }

  /** The share of `scope` in force at `nowMs` (monotonic). */
  shareOf(scope: string, nowMs: number): number {
    if (nowMs >= this.#nextChangeAtMs) this.#recompute(nowMs);
    return this.#inForce.get(scope) ?? this.#floorShare;
  }

  /**
   * `resolution` with each global check's limit scaled by its share in force at `nowMs`, and
   * `cost` counted as demand on each; `resolution` itself when it has no global check.
   */
  apply(resolution: Resolution, cost: number, nowMs: number): Resolution {
    if (this.#plain.has(resolution.checks)) return resolution;
    if (nowMs >= this.#nextChangeAtMs) this.#recompute(nowMs);
    let scaled = this.#scaled.get(resolution);
    if (scaled === undefined || scaled.generation !== this.#generation) {
      const checks = this.#scaledChecksOf(resolution.checks);
      if (checks === resolution.checks) return resolution;
      scaled = { generation: this.#generation, resolution: { ...resolution, checks } };
      this.#scaled.set(resolution, scaled);
    }
    if (cost > 0) {
      for (const check of resolution.checks) {
        if (check.global === true) {
          this.#demand.set(check.scope, (this.#demand.get(check.scope) ?? 0) + cost);
        }
      }
    }
    return scaled.resolution;
  }

  /** Whether `resolution` has a global check (it must then go through {@link apply}). */
  hasGlobal(resolution: Resolution): boolean {
    const { checks } = resolution;
    return !this.#plain.has(checks) && checks.some((check) => check.global === true);
  }

  /** Whether `checks` (as {@link apply} returned them) hold a global check: never leased. */
  isGlobal(checks: readonly object[]): boolean {
    return this.#globalChecks.has(checks as readonly ResolvedCheck[]);
  }

  /** The demand counted since the last call, by scope, and starts counting afresh. */
  takeDemand(): ReadonlyMap<string, number> {
    const taken = this.#demand;
    this.#demand = new Map();
    return taken;
  }

  /** Puts back demand a poll could not write, to be written by the next. */
  restoreDemand(demand: ReadonlyMap<string, number>): void {
    for (const [scope, units] of demand) {
      this.#demand.set(scope, (this.#demand.get(scope) ?? 0) + units);
    }
  }

  /**
   * `checks` with each global check's limit scaled by the share in force, one list per
   * generation, shared by every resolution made with `checks`; `checks` itself when it has no
   * global check.
   */
  #scaledChecksOf(checks: readonly ResolvedCheck[]): readonly ResolvedCheck[] {
    const known = this.#scaledChecks.get(checks);
    if (known !== undefined && known.generation === this.#generation) return known.checks;
    if (!checks.some((check) => check.global === true)) {
      this.#plain.add(checks);
      return checks;
    }
    const scaled = Object.freeze(
      checks.map((check) =>
        check.global === true
          ? Object.freeze({
              ...check,
              limit: scaleLimit(check.limit, this.#inForce.get(check.scope) ?? this.#floorShare),
            })
          : check,
      ),
    );
    this.#globalChecks.add(scaled);
    this.#scaledChecks.set(checks, { generation: this.#generation, checks: scaled });
    return scaled;
  }

  #recompute(nowMs: number): void {
    let nextChangeAtMs = Number.POSITIVE_INFINITY;
    let isChanged = false;
    const scopes = new Set([...this.#inForce.keys(), ...this.#held.keys()]);
    for (const scope of scopes) {
      const held = this.#held.get(scope);
      let share = this.#floorShare;
      if (held !== undefined) {
        if (nowMs < held.untilMs) {
          share = held.share;
          nextChangeAtMs = Math.min(nextChangeAtMs, held.untilMs);
        } else {
          share = Math.min(held.share, held.floorShare);
        }
      }
      if (held === undefined) {
        if (this.#inForce.delete(scope)) isChanged = true;
      } else if (this.#inForce.get(scope) !== share) {
        this.#inForce.set(scope, share);
        isChanged = true;
      }
    }
    this.#nextChangeAtMs = nextChangeAtMs;
    if (isChanged) this.#generation++;
  }
}

/**
 * A token bucket's capacity and refill times `share` (the only algorithm a limit can be global
 * with: a lowered capacity clamps the balance). The refill stays at least the least rate a limit
 * takes; a share of 0 leaves a capacity of 0, which admits nothing.
 */
export function scaleLimit(limit: LimitSpec, share: number): LimitSpec {
  if (limit.algorithm !== "token-bucket") return limit;
  return {
    algorithm: "token-bucket",
    capacity: limit.capacity * share,
    refillPerSec: Math.max(MIN_RATE_PER_SEC, limit.refillPerSec * share),
  };
}

/** The commands a poll sends, in one pipeline (a `control` client). */
export interface GlobalShareRedis {
  pipeline(): GlobalSharePipeline;
}

export interface GlobalSharePipeline {
  time(): unknown;
  get(key: string): unknown;
  incrbyfloat(key: string, increment: number): unknown;
  exec(): Promise<[Error | null, unknown][] | null>;
}

export interface GlobalShareFollowerOptions {
  readonly redis: GlobalShareRedis;
  readonly budgets: GlobalBudgets;
  /** REDIS_KEY_PREFIX. */
  readonly prefix: string;
  /** The scopes of the global limits of the policy in force (`globalLimitScopes`). */
  readonly scopes: () => readonly string[];
  readonly clock: Clock;
}

/**
 * Reads the region's shares of the global limits and adds the demand counted since the last poll,
 * in one pipeline: `TIME`, a `GET` per global limit and an `INCRBYFLOAT` per limit with demand.
 * Run every `globalBudgets.pollIntervalMs`. A failed poll keeps the shares held (their leases run
 * out by themselves) and puts the demand back for the next.
 */
export class GlobalShareFollower {
  readonly #options: GlobalShareFollowerOptions;
  readonly #names: GlobalBudgetRedisNames;

  constructor(options: GlobalShareFollowerOptions) {
    this.#options = options;
    this.#names = globalBudgetRedisNames(options.prefix);
  }

  async poll(): Promise<void> {
    const { budgets, redis, clock } = this.#options;
    const scopes = this.#options.scopes();
    const demand = budgets.takeDemand();
    if (scopes.length === 0 && demand.size === 0) {
      budgets.update(new Map(), 0, clock.nowMs());
      return;
    }
    const pipeline = redis.pipeline();
    pipeline.time();
    for (const scope of scopes) pipeline.get(this.#names.share(scope));
    for (const [scope, units] of demand) {
      if (units > 0) pipeline.incrbyfloat(this.#names.demand(scope), units);
    }
    const sentAtMs = clock.nowMs();
    let replies: [Error | null, unknown][] | null;
    try {
      replies = await pipeline.exec();
    } catch (error: unknown) {
      budgets.restoreDemand(demand);
      throw error;
    }
    const [timeReply, ...rest] = replies ?? [];
    const redisNowMs = redisTimeMs(timeReply);
    if (redisNowMs === null) {
      budgets.restoreDemand(demand);
      return;
    }
    // Demand whose increment failed is written by the next poll.
    const failedDemand = new Map<string, number>();
    let index = scopes.length;
    for (const [scope, units] of demand) {
      if (!(units > 0)) continue;
      if (rest[index]?.[0] !== null) failedDemand.set(scope, units);
      index++;
    }
    budgets.restoreDemand(failedDemand);
    const readings = new Map<string, GlobalShareReading | null | undefined>();
    scopes.forEach((scope, position) => {
      const reply = rest[position];
      readings.set(
        scope,
        reply === undefined || reply[0] !== null
          ? undefined
          : parseGlobalShare(typeof reply[1] === "string" ? reply[1] : null),
      );
    });
    budgets.update(readings, redisNowMs, sentAtMs);
  }
}

/** Redis's `TIME` reply as epoch ms; null when the reply is not one. */
function redisTimeMs(reply: [Error | null, unknown] | undefined): number | null {
  if (reply === undefined || reply[0] !== null || !Array.isArray(reply[1])) return null;
  const [seconds, micros] = reply[1] as unknown[];
  const ms = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  return Number.isFinite(ms) ? ms : null;
}
