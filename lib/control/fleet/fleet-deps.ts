/**
 * What the fleet reads need: the console's read connection (`consoleRedis`, one per process)
 * and the key prefix. Tests pass their own.
 */

import { consoleRedis } from "@/lib/server/console-redis";
import { loadEnv } from "@/lib/server/env";

/** The commands the fleet reads use; an ioredis client satisfies it. */
export interface FleetRedis {
  zrevrange(key: string, start: number, stop: number): Promise<string[]>;
  hgetall(key: string): Promise<Record<string, string>>;
  hmget(key: string, ...fields: string[]): Promise<(string | null)[]>;
}

export interface FleetDeps {
  readonly redis: FleetRedis;
  /** REDIS_KEY_PREFIX. */
  readonly prefix: string;
  /** Wall clock, ms. */
  readonly nowMs: () => number;
}

const globalForFleet = globalThis as typeof globalThis & { limitplaneFleetDeps?: FleetDeps };

export function getFleetDeps(): FleetDeps {
  globalForFleet.limitplaneFleetDeps ??= {
    redis: consoleRedis(),
    prefix: loadEnv().REDIS_KEY_PREFIX,
    nowMs: Date.now,
  };
  return globalForFleet.limitplaneFleetDeps;
}
