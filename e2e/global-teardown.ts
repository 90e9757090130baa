import { deleteKeysUnder } from "@limitplane/enforcer/testing";
import { Redis } from "ioredis";
import { dropDatabase } from "../scripts/db/databases";
import { E2E_DATABASE_URL, E2E_REDIS_PREFIX, E2E_REDIS_URL } from "./run-env";

/** Removes the run's database and Redis keys, whatever the specs left behind. */
export default async function globalTeardown(): Promise<void> {
  await dropDatabase(E2E_DATABASE_URL);
  const redis = new Redis(E2E_REDIS_URL, { maxRetriesPerRequest: 1 });
  try {
    await deleteKeysUnder(redis, E2E_REDIS_PREFIX);
  } finally {
    redis.disconnect();
  }
}
