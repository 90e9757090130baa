/**
 * What the seen-customer reads need: the console's read connection to the enforcers' Redis
 * (`consoleRedis`), the key prefix and the wall clock; listing also needs the database (to leave
 * registered customers out). Tests pass their own.
 */
import type { SeenReadingRedis } from "@limitplane/enforcer/publication";
import { consoleRedis } from "@/lib/server/console-redis";
import { loadEnv } from "@/lib/server/env";
import { getControlDeps, type ReadDeps } from "../control-deps";

export interface SeenRedisDeps {
  readonly redis: SeenReadingRedis;
  /** REDIS_KEY_PREFIX. */
  readonly prefix: string;
  /** Wall clock, ms. */
  readonly nowMs: () => number;
}

export interface SeenCustomerDeps extends SeenRedisDeps, ReadDeps {}

const globalForSeen = globalThis as typeof globalThis & {
  limitplaneSeenRedisDeps?: SeenRedisDeps;
};

export function getSeenRedisDeps(): SeenRedisDeps {
  globalForSeen.limitplaneSeenRedisDeps ??= {
    redis: consoleRedis(),
    prefix: loadEnv().REDIS_KEY_PREFIX,
    nowMs: Date.now,
  };
  return globalForSeen.limitplaneSeenRedisDeps;
}

export function getSeenCustomerDeps(): SeenCustomerDeps {
  return { ...getSeenRedisDeps(), db: getControlDeps().db };
}

/** Replaces the process-wide Redis side (tests that call route handlers or services). */
export function installSeenRedisDeps(deps: SeenRedisDeps): void {
  globalForSeen.limitplaneSeenRedisDeps = deps;
}
