/**
 * What the fleet reads need: a `control` Redis client (created once per process, on first use)
 * and the key prefix. Tests pass their own.
 */
import { loadEnv } from "@/lib/server/env";
import { createRedis } from "@/lib/server/redis";

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
    redis: createRedis("control", { connectionName: "limitplane-console-fleet" }),
    prefix: loadEnv().REDIS_KEY_PREFIX,
    nowMs: Date.now,
  };
  return globalForFleet.limitplaneFleetDeps;
}
