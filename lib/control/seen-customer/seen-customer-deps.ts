/**
 * What the seen-customer reads need: the console's read connection to the enforcers' Redis
 * (`consoleRedis`), the key prefix and the wall clock; listing also needs the database (to leave
 * registered customers out). Tests pass their own.
 */
import type { SeenReadingRedis } from "@limitplane/enforcer/publication";
import { clock, controlDeps } from "@/lib/server/composition";
import { consoleRedis } from "@/lib/server/console-redis";
import { loadEnv } from "@/lib/server/env";
import type { Clock, ReadDeps } from "../deps";

export interface SeenRedisDeps {
  readonly redis: SeenReadingRedis;
  /** REDIS_KEY_PREFIX. */
  readonly prefix: string;
  readonly clock: Clock;
}

export interface SeenCustomerDeps extends SeenRedisDeps, ReadDeps {}

const globalForSeen = globalThis as typeof globalThis & {
  limitplaneSeenRedisDeps?: SeenRedisDeps;
};

export function getSeenRedisDeps(): SeenRedisDeps {
  globalForSeen.limitplaneSeenRedisDeps ??= {
    redis: consoleRedis(),
    prefix: loadEnv().REDIS_KEY_PREFIX,
    clock: clock(),
  };
  return globalForSeen.limitplaneSeenRedisDeps;
}

export function getSeenCustomerDeps(): SeenCustomerDeps {
  return { ...getSeenRedisDeps(), db: controlDeps().db };
}

/** Replaces the process-wide Redis side (tests that call route handlers or services). */
export function installSeenRedisDeps(deps: SeenRedisDeps): void {
  globalForSeen.limitplaneSeenRedisDeps = deps;
}
