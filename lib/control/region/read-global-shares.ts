/**
 * Each global limit's share per region, as the worker last wrote it to the region's Redis
 * (`{global}:share:<scope>`, docs/regions.md "Global budgets"), for the console. The limits are
 * those of the latest policy (`readGlobalLimitScopes`, the reconciler's own list); each region is
 * read with one MGET (every key shares the `{global}` hash tag). A region that does not answer is
 * reported with its error, and the others are still read.
 */
import { globalBudgetRedisNames, parseGlobalShare } from "@limitplane/enforcer/publication";
import type { Clock, ReadDeps } from "../deps";
import { readGlobalLimitScopes } from "./reconcile-global-budgets";

/** The one command the read uses; an ioredis client or cluster satisfies it. */
export interface GlobalShareRedis {
  mget(...keys: string[]): Promise<(string | null)[]>;
}

export interface ReadGlobalSharesDeps extends ReadDeps {
  /** Each region's Redis; one entry named "" for a one-Redis installation. */
  readonly regions: readonly { readonly region: string; readonly redis: GlobalShareRedis }[];
  /** REDIS_KEY_PREFIX. */
  readonly prefix: string;
  readonly clock: Clock;
}

/** One region's share of one global limit. */
export interface RegionShare {
  readonly region: string;
  /**
   * The share written (0 to 1), while its lease runs by the console's clock; null when none is
   * written, it does not parse, or its lease has ended: the region's enforcers apply the floor.
   */
  readonly share: number | null;
  /** The floor share the worker wrote with it (or last wrote, after the lease); null when none. */
  readonly floorShare: number | null;
}

export interface GlobalLimitShares {
  readonly scope: string;
  /** In the order of `deps.regions`; a region that could not be read is in `unreadable`. */
  readonly regions: readonly RegionShare[];
}

export interface GlobalShares {
  /** One entry per global limit of the latest policy, in its scopes' order; empty when none. */
  readonly limits: readonly GlobalLimitShares[];
  /** Regions whose Redis did not answer, with why. */
  readonly unreadable: readonly { readonly region: string; readonly error: string }[];
}

/** The shares of every global limit in every region. */
export async function readGlobalShares(deps: ReadGlobalSharesDeps): Promise<GlobalShares> {
  const scopes = await readGlobalLimitScopes(deps.db);
  if (scopes.length === 0) return { limits: [], unreadable: [] };
  const names = globalBudgetRedisNames(deps.prefix);
  const keys = scopes.map((scope) => names.share(scope));
  const readings = await Promise.all(
    deps.regions.map(async ({ region, redis }) => {
      try {
        return { region, values: await redis.mget(...keys), error: null };
      } catch (error: unknown) {
        return {
          region,
          values: null,
          error: error instanceof Error ? error.message : "no answer",
        };
      }
    }),
  );
  const nowMs = deps.clock.nowMs();
  const readable = readings.filter((reading) => reading.values !== null);
  return {
    limits: scopes.map((scope, index) => ({
      scope,
      regions: readable.map(({ region, values }) => {
        const value = parseGlobalShare(values?.[index] ?? null);
        return {
          region,
          share: value !== null && value.leaseExpiresAtMs > nowMs ? value.share : null,
          floorShare: value?.floorShare ?? null,
        };
      }),
    })),
    unreadable: readings.flatMap((reading) =>
      reading.error === null ? [] : [{ region: reading.region, error: reading.error }],
    ),
  };
}
