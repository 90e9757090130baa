/**
 * Gives each run of the package's Redis tests its own key prefix on the shared Redis
 * (`TEST_REDIS_URL`, default 127.0.0.1:6379), and deletes every key under it at the end.
 */
import { Redis } from "ioredis";
import type { TestProject } from "vitest/node";
import { deleteKeysUnder } from "../src/testing/redis-keys";

declare module "vitest" {
  export interface ProvidedContext {
    redisUrl: string;
    redisKeyPrefix: string;
  }
}

const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379/0";

export default async function setup(project: TestProject) {
  const redis = new Redis(REDIS_URL, {
    lazyConnect: true,
    connectTimeout: 3_000,
    maxRetriesPerRequest: 0,
  });
  redis.on("error", () => {});
  try {
    await redis.connect();
    await redis.ping();
  } catch (error: unknown) {
    redis.disconnect();
    throw new Error(
      `The Redis tests need Redis at ${REDIS_URL} (${String(error)}). Start it: redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no`,
    );
  }
  const prefix = `lpk:${Date.now().toString(36)}_${process.pid}:`;
  project.provide("redisUrl", REDIS_URL);
  project.provide("redisKeyPrefix", prefix);
  return async () => {
    await deleteKeysUnder(redis, prefix);
    await redis.quit();
  };
}
