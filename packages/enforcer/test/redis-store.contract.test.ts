import { inject } from "vitest";
import { RedisStore } from "../src/limiter/stores/redis";
import { runLimiterStoreContract } from "../src/testing/limiter-store-contract";
import { readyRedis } from "./support/redis";

// The same suite the reference store and MemoryStore pass, unchanged: the script is given the
// suite's ManualClock time instead of Redis TIME.
runLimiterStoreContract("RedisStore", async (clock) => {
  const client = await readyRedis("decisions");
  const store = new RedisStore({ client, keyPrefix: inject("redisKeyPrefix"), clock });
  return {
    decide: (input) => store.decide(input),
    peek: (input) => store.peek(input),
    close: async () => {
      await client.quit();
    },
  };
});

// Batching on: each decision still goes through the queue and the batched script path.
runLimiterStoreContract("RedisStore, batching up to 64 decisions per call", async (clock) => {
  const client = await readyRedis("decisions");
  const store = new RedisStore({
    client,
    keyPrefix: inject("redisKeyPrefix"),
    clock,
    maxBatchSize: 64,
  });
  return {
    decide: (input) => store.decide(input),
    peek: (input) => store.peek(input),
    close: async () => {
      await client.quit();
    },
  };
});

// The EVAL form (what the store falls back to on a Redis that refuses functions): the same body.
runLimiterStoreContract("RedisStore, EVAL form", async (clock) => {
  const client = await readyRedis("decisions");
  const store = new RedisStore({
    client,
    keyPrefix: inject("redisKeyPrefix"),
    clock,
    scriptForm: "eval",
  });
  return {
    decide: (input) => store.decide(input),
    peek: (input) => store.peek(input),
    close: async () => {
      await client.quit();
    },
  };
});
