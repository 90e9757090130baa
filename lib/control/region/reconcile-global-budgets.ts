/**
 * The reconciler of global budgets (docs/regions.md, "Global budgets"): every round it reads each
 * region's share, lease and demand counter of every global limit, divides each limit among the
 * regions with `allotGlobalBudget`, and writes the result: the decreases (and the renewals of
 * shares that stay) first, then, once every one of them is written and `applyMs` has passed (the
 * longest an enforcer takes to apply a share written to its Redis), the increases. So no region
 * is raised before the others' decreases are in force.
 *
 * A region that does not answer within `timeoutMs` is unreachable this round: it is written
 * nothing and its share stays frozen until its lease has ended (allot-global-budget.ts). What the
 * reconciler remembers of a region is the largest share and the latest lease it tried to write,
 * so a write whose outcome it could not see (a timeout) is counted as if it had landed. When a
 * phase-1 write fails, no increase is written that round.
 */

import {
  globalLimitScopesOfPolicy,
  parseEntryText,
  snapshotPolicyOfEntries,
} from "@limitplane/enforcer/policy";
import {
  formatGlobalShare,
  globalBudgetRedisNames,
  parseGlobalShare,
  type RedisClient,
} from "@limitplane/enforcer/publication";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { type Allotment, allotGlobalBudget, type RegionBudgetState } from "./allot-global-budget";

export interface GlobalBudgetSettings {
  /** GLOBAL_BUDGET_INTERVAL_MS: how often a round runs. */
  readonly intervalMs: number;
  /** GLOBAL_BUDGET_LEASE_MS. */
  readonly leaseMs: number;
  /** GLOBAL_BUDGET_SKEW_MS. */
  readonly skewMs: number;
  /** GLOBAL_BUDGET_APPLY_MS: the wait between the decreases and the increases. */
  readonly applyMs: number;
  /** GLOBAL_BUDGET_FLOOR_SHARE. */
  readonly floorShare: number;
  /** How long a region's reads or writes may take before it counts as unreachable. */
  readonly timeoutMs: number;
}

export interface ReconcileGlobalBudgetsDeps {
  /** Reads the global limits of the policy (tiers, endpoint classes, settings entries only). */
  readonly db: Pick<PrismaClient, "policyEntry">;
  /** Each region's `control` client; one entry named after the installation without REGIONS. */
  readonly regions: readonly { readonly name: string; readonly redis: RedisClient }[];
  /** REDIS_KEY_PREFIX. */
  readonly prefix: string;
  readonly clock: { nowMs(): number };
  /** Waits `ms` (the apply wait); resolves early when `signal` aborts. */
  readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** One region's reading of one global limit. */
interface RegionReading {
  readonly share: number;
  readonly leaseExpiresAtMs: number;
  readonly demandCount: number;
}

/** What one round did, for logs and tests. */
export interface ReconcileRound {
  readonly scopes: readonly string[];
  /** Per scope, the allotment computed. */
  readonly allotments: ReadonlyMap<string, Allotment>;
  readonly unreachable: readonly string[];
  /** Whether the increases were written (false when a decrease could not be). */
  readonly isIncreased: boolean;
}

interface Remembered {
  share: number;
  leaseExpiresAtMs: number;
}

const SHARE_TTL_LEASES = 10;

/** The scopes of the global limits in the policy at its latest version. */
export async function readGlobalLimitScopes(
  db: Pick<PrismaClient, "policyEntry">,
): Promise<readonly string[]> {
  const rows = await db.policyEntry.findMany({
    where: { kind: { in: ["settings", "tier", "endpoint-class"] } },
    select: { key: true, value: true },
  });
  if (rows.length === 0) return [];
  const entries = rows.map((row) => {
    const parsed = parseEntryText(row.key, row.value);
    if (!parsed.ok) throw new Error(`policy entry ${row.key} does not parse`);
    return parsed.value;
  });
  if (!rows.some((row) => row.key === "settings")) return [];
  return globalLimitScopesOfPolicy(snapshotPolicyOfEntries(entries));
}

export class GlobalBudgetReconciler {
  readonly #deps: ReconcileGlobalBudgetsDeps;
  readonly #settings: GlobalBudgetSettings;
  /** `${scope}\n${region}` → the last demand counter read and when (reconciler's clock). */
  readonly #lastDemand = new Map<string, { count: number; atMs: number }>();
  /** `${scope}\n${region}` → the largest share and latest lease possibly in force. */
  readonly #remembered = new Map<string, Remembered>();

  constructor(deps: ReconcileGlobalBudgetsDeps, settings: GlobalBudgetSettings) {
    this.#deps = deps;
    this.#settings = settings;
  }

  /** One round: read, allot, write decreases, wait, write increases. */
  async run(signal?: AbortSignal): Promise<ReconcileRound> {
    const scopes = await readGlobalLimitScopes(this.#deps.db);
    const allotments = new Map<string, Allotment>();
    if (scopes.length === 0) {
      return { scopes, allotments, unreachable: [], isIncreased: false };
    }
    const { regions, clock } = this.#deps;
    const { leaseMs, skewMs, floorShare } = this.#settings;
    const readings = await Promise.all(regions.map((region) => this.#read(region.redis, scopes)));
    const nowMs = clock.nowMs();
    const unreachable = regions
      .filter((_, index) => readings[index] === null)
      .map((region) => region.name);

    const phases: Map<string, Map<string, string>>[] = [new Map(), new Map()];
    for (const scope of scopes) {
      const states = regions.map((region, index): RegionBudgetState => {
        const key = `${scope}\n${region.name}`;
        const reading = readings[index]?.get(scope);
        if (reading === undefined) {
          // Unreachable: what it may hold, or the most it could hold when nothing is remembered.
          const remembered = this.#remembered.get(key) ?? {
            share: Math.max(0, 1 - floorShare * (regions.length - 1)),
            leaseExpiresAtMs: nowMs + leaseMs,
          };
          return { region: region.name, ...remembered, isReachable: false, demandPerSec: 0 };
        }
        const last = this.#lastDemand.get(key);
        const grown = last === undefined ? 0 : reading.demandCount - last.count;
        const elapsedSec = last === undefined ? 0 : (nowMs - last.atMs) / 1000;
        this.#lastDemand.set(key, { count: reading.demandCount, atMs: nowMs });
        // Its connection answered after every write sent before: it holds what it says.
        this.#remembered.set(key, {
          share: reading.share,
          leaseExpiresAtMs: reading.leaseExpiresAtMs,
        });
        // What its enforcers may use now: the share while its lease may run, else the floor.
        const isLeaseRunning = nowMs < reading.leaseExpiresAtMs + skewMs;
        return {
          region: region.name,
          share: isLeaseRunning ? reading.share : Math.min(reading.share, floorShare),
          leaseExpiresAtMs: reading.leaseExpiresAtMs,
          isReachable: true,
          demandPerSec: grown > 0 && elapsedSec > 0 ? grown / elapsedSec : 0,
        };
      });
      const allotment = allotGlobalBudget(states, { nowMs, leaseMs, skewMs, floorShare });
      allotments.set(scope, allotment);
      const increases = new Set(allotment.increases);
      for (const entry of allotment.regions) {
        if (entry.status !== "allotted") continue;
        const phase = phases[increases.has(entry.region) ? 1 : 0];
        let writes = phase?.get(entry.region);
        if (writes === undefined) {
          writes = new Map();
          phase?.set(entry.region, writes);
        }
        writes.set(
          scope,
          formatGlobalShare({
            share: entry.share,
            leaseExpiresAtMs: entry.leaseExpiresAtMs,
            floorShare,
          }),
        );
      }
    }

    const [decreases, increases] = phases as [
      Map<string, Map<string, string>>,
      Map<string, Map<string, string>>,
    ];
    const isWritten = await this.#writePhase(decreases);
    let isIncreased = false;
    const isAborted = () => signal?.aborted === true;
    if (isWritten && increases.size > 0 && !isAborted()) {
      // Every decrease is in Redis: once each enforcer has applied it, the increases follow.
      await this.#deps.sleep(this.#settings.applyMs, signal);
      if (!isAborted()) {
        await this.#writePhase(increases);
        isIncreased = true;
      }
    }
    return { scopes, allotments, unreachable, isIncreased };
  }

  /** Reads every scope's share and demand from one region; null when it does not answer. */
  async #read(
    redis: RedisClient,
    scopes: readonly string[],
  ): Promise<Map<string, RegionReading> | null> {
    const names = globalBudgetRedisNames(this.#deps.prefix);
    const pipeline = redis.pipeline();
    for (const scope of scopes) {
      pipeline.get(names.share(scope));
      pipeline.get(names.demand(scope));
    }
    const replies = await this.#within(pipeline.exec());
    if (replies === null) return null;
    const readings = new Map<string, RegionReading>();
    for (const [index, scope] of scopes.entries()) {
      const shareReply = replies[index * 2];
      const demandReply = replies[index * 2 + 1];
      if (shareReply?.[0] != null || demandReply?.[0] != null) return null;
      const share = parseGlobalShare(typeof shareReply?.[1] === "string" ? shareReply[1] : null);
      const demandCount = Number(demandReply?.[1] ?? 0);
      readings.set(scope, {
        // No share written yet: its enforcers use the floor, with no lease.
        share: share?.share ?? this.#settings.floorShare,
        leaseExpiresAtMs: share?.leaseExpiresAtMs ?? 0,
        demandCount: Number.isFinite(demandCount) ? demandCount : 0,
      });
    }
    return readings;
  }

  /**
   * Writes one phase: per region, its scopes' shares in one pipeline. True when every region
   * confirmed every write. Remembers each attempted share whatever came of it.
   */
  async #writePhase(writes: Map<string, Map<string, string>>): Promise<boolean> {
    const names = globalBudgetRedisNames(this.#deps.prefix);
    const ttlMs = this.#settings.leaseMs * SHARE_TTL_LEASES;
    const results = await Promise.all(
      [...writes].map(async ([regionName, shares]) => {
        const region = this.#deps.regions.find((entry) => entry.name === regionName);
        if (region === undefined) return false;
        const pipeline = region.redis.pipeline();
        for (const [scope, text] of shares) {
          pipeline.set(names.share(scope), text, "PX", ttlMs);
          const value = parseGlobalShare(text);
          if (value === null) continue;
          const key = `${scope}\n${regionName}`;
          const before = this.#remembered.get(key);
          this.#remembered.set(key, {
            share: Math.max(value.share, before?.share ?? 0),
            leaseExpiresAtMs: Math.max(value.leaseExpiresAtMs, before?.leaseExpiresAtMs ?? 0),
          });
        }
        const replies = await this.#within(pipeline.exec());
        const isWritten = replies?.every(([error]) => error === null) ?? false;
        if (isWritten) {
          // Confirmed: what it holds is exactly what was written.
          for (const [scope, text] of shares) {
            const value = parseGlobalShare(text);
            if (value !== null) {
              this.#remembered.set(`${scope}\n${regionName}`, {
                share: value.share,
                leaseExpiresAtMs: value.leaseExpiresAtMs,
              });
            }
          }
        }
        return isWritten;
      }),
    );
    return results.every(Boolean);
  }

  /** `call`'s replies, or null when it fails or takes longer than `timeoutMs`. */
  async #within(
    call: Promise<[Error | null, unknown][] | null>,
  ): Promise<[Error | null, unknown][] | null> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), this.#settings.timeoutMs);
    });
    try {
      return await Promise.race([call.catch(() => null), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
