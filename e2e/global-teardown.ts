import { Redis } from "ioredis";
import { dropDatabase } from "../scripts/db/databases";
import { E2E_DATABASE_URL, E2E_REDIS_PREFIX, E2E_REDIS_URL } from "./run-env";

/** Removes the run's database and Redis keys, whatever the specs left behind. */
export default async function globalTeardown(): Promise<void> {
  await dropDatabase(E2E_DATABASE_URL);
  const redis = new Redis(E2E_REDIS_URL, { maxRetriesPerRequest: 1 });
  try {
    // Not `deleteKeysUnder` from @limitplane/enforcer/testing: Playwright's loader cannot load
    // that module (its example policy is a JSON import without an import attribute).
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${E2E_REDIS_PREFIX}*`, "COUNT", 1000);
      cursor = next;
      if (keys.length > 0) await redis.unlink(...keys);
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
}
