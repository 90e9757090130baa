/**
 * The limiter store the control plane shares with the enforcers: the Redis store, on one
 * `control` connection per process. Not the enforcers' fail-at-once `decisions` role: the console
 * is no hot path, and a command queued while the connection (re)opens beats a first sign-in or
 * explain that finds Redis "down" because it has not connected yet; a dead Redis still fails
 * within the control role's 1 s command timeout, and callers fall back. Explain peeks at the buckets the gateways fill (keys under
 * REDIS_KEY_PREFIX, exactly as the enforcer writes them); sign-in limits its own attempts under
 * REDIS_KEY_PREFIX + "signin:".
 */
import "server-only";

import { type LimiterStore, RedisStore } from "@limitplane/enforcer/limiter";
import type { RedisClient } from "@limitplane/enforcer/publication";
import { loadEnv } from "./env";
import { createRedis } from "./redis";

const globalForStores = globalThis as typeof globalThis & {
  limitplaneLimiterStores?: Map<string, LimiterStore>;
  limitplaneLimiterRedis?: RedisClient;
};

/** The shared store whose keys start with REDIS_KEY_PREFIX + `subPrefix`. */
export function getSharedLimiterStore(subPrefix = ""): LimiterStore {
  globalForStores.limitplaneLimiterStores ??= new Map();
  const stores = globalForStores.limitplaneLimiterStores;
  let store = stores.get(subPrefix);
  if (store === undefined) {
    const client =
      globalForStores.limitplaneLimiterRedis ??
      createRedis("control", { connectionName: "limitplane-console-limiter" });
    globalForStores.limitplaneLimiterRedis = client;
    store = new RedisStore({
      client,
      keyPrefix: `${loadEnv().REDIS_KEY_PREFIX}${subPrefix}`,
    });
    stores.set(subPrefix, store);
  }
  return store;
}

/** Closes the shared connection (tests, and scripts that are done). The next use reopens it. */
export function closeSharedLimiterStores(): void {
  globalForStores.limitplaneLimiterRedis?.disconnect();
  globalForStores.limitplaneLimiterRedis = undefined;
  globalForStores.limitplaneLimiterStores = undefined;
}
