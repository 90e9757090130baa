/**
 * How far a policy version has travelled: of the enforcers that sent a heartbeat recently, how
 * many run that version or a later one. Read from the heartbeats the enforcers write to Redis
 * (`lib/enforcer/reporters.ts`, keys in `lib/enforcer/redis-keys.ts`), so "promoted" can be
 * followed by "enforced by 2 of 2 gateways" rather than a promise.
 */
import { enforcerRedisNames } from "@/lib/enforcer/redis-keys";
import { loadEnv } from "@/lib/server/env";
import { createRedis } from "@/lib/server/redis";

/** The commands used; an ioredis client satisfies it. */
export interface RolloutRedis {
  zrangebyscore(key: string, min: number | string, max: number | string): Promise<string[]>;
  hget(key: string, field: string): Promise<string | null>;
}

export interface RolloutDeps {
  readonly redis: RolloutRedis;
  /** REDIS_KEY_PREFIX. */
  readonly prefix: string;
}

export interface ReadPolicyRolloutOptions {
  readonly version: number;
  /** Wall clock, ms. */
  readonly nowMs: number;
  /** An enforcer counts as live if its last heartbeat is this recent. @default 10_000 (the heartbeat hash lives 10 s by default) */
  readonly liveWithinMs?: number;
}

export interface PolicyRollout {
  readonly version: number;
  /** Enforcers with a recent heartbeat. */
  readonly liveEnforcers: number;
  /** Of those, the ones running `version` or later. */
  readonly atVersion: number;
  /** Those still on an older version (or none), by id. */
  readonly behind: readonly { readonly enforcerId: string; readonly version: number | null }[];
}

/** The rollout of `version`, or null when Redis cannot be read. */
export async function readPolicyRollout(
  options: ReadPolicyRolloutOptions,
  deps: RolloutDeps = defaultRolloutDeps(),
): Promise<PolicyRollout | null> {
  const names = enforcerRedisNames(deps.prefix);
  try {
    const ids = await deps.redis.zrangebyscore(
      names.enforcers,
      options.nowMs - (options.liveWithinMs ?? 10_000),
      "+inf",
    );
    const versions = await Promise.all(
      ids.map(async (enforcerId) => {
        const text = await deps.redis.hget(names.enforcer(enforcerId), "version");
        const version = text === null || text === "" ? null : Number(text);
        return {
          enforcerId,
          version: version !== null && Number.isInteger(version) ? version : null,
        };
      }),
    );
    const behind = versions.filter(
      (enforcer) => enforcer.version === null || enforcer.version < options.version,
    );
    return {
      version: options.version,
      liveEnforcers: versions.length,
      atVersion: versions.length - behind.length,
      behind: behind.sort((a, b) => (a.enforcerId < b.enforcerId ? -1 : 1)),
    };
  } catch (error: unknown) {
    console.warn("policy rollout: enforcer heartbeats unavailable", error);
    return null;
  }
}

const globalForRollout = globalThis as typeof globalThis & {
  limitplaneRolloutRedis?: RolloutRedis;
};

function defaultRolloutDeps(): RolloutDeps {
  globalForRollout.limitplaneRolloutRedis ??= createRedis("control", {
    connectionName: "limitplane-console-rollout",
  });
  return { redis: globalForRollout.limitplaneRolloutRedis, prefix: loadEnv().REDIS_KEY_PREFIX };
}
