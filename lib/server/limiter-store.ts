/**
 * The limiter store the control plane shares with the enforcers. Explain peeks at the buckets the
 * gateways fill (keys under REDIS_KEY_PREFIX, exactly as the enforcer writes them); sign-in
 * limits its own attempts under REDIS_KEY_PREFIX + "signin:". One `decisions` connection serves
 * every store of the process.
 *
 * Until the Redis store is merged (lib/limiter/stores/redis.ts) this is an in-process
 * MemoryStore: correct within one console process, not shared between instances.
 */
import { type LimiterStore, MemoryStore } from "@/lib/limiter";

const globalForStores = globalThis as typeof globalThis & {
  limitplaneLimiterStores?: Map<string, LimiterStore>;
};

/** The shared store whose keys start with REDIS_KEY_PREFIX + `subPrefix`. */
export function getSharedLimiterStore(subPrefix = ""): LimiterStore {
  globalForStores.limitplaneLimiterStores ??= new Map();
  const stores = globalForStores.limitplaneLimiterStores;
  let store = stores.get(subPrefix);
  if (store === undefined) {
    store = new MemoryStore({ maxKeys: 100_000 });
    stores.set(subPrefix, store);
  }
  return store;
}
