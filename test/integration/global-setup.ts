/**
 * Gives each integration run its own Postgres database (migrated from prisma/migrations) and its
 * own Redis key prefix, so two runs on one machine cannot see each other's data. Both are removed
 * when the run ends. As in production, the tables belong to the owner (`ownerDatabaseUrl`, which
 * migrates and creates databases) and the code under test connects as the least-privilege
 * application role (`databaseUrl`, scripts/db/app-role.ts), created once per cluster.
 */
import { deleteKeysUnder } from "@limitplane/enforcer/testing";
import { Redis } from "ioredis";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { TEST_APPLICATION_ROLE, urlForRole } from "../../scripts/db/app-role";
import {
  createDatabase,
  dropDatabase,
  dropDatabasesStartingWith,
  withDatabase,
} from "../../scripts/db/databases";
import { deploy } from "../../scripts/db/migrate";
import { assertLocalUrl } from "../../scripts/lib/local-database";

declare module "vitest" {
  export interface ProvidedContext {
    /** The run's database, as the application role. */
    databaseUrl: string;
    /** The same database as its owner (migrations, scratch databases, the audit trigger's tests). */
    ownerDatabaseUrl: string;
    redisUrl: string;
    redisKeyPrefix: string;
  }
}

const BASE_DATABASE_URL =
  process.env.TEST_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379/0";
assertLocalUrl("TEST_DATABASE_URL", BASE_DATABASE_URL);
assertLocalUrl("TEST_REDIS_URL", REDIS_URL);

async function assertPostgres(): Promise<void> {
  const client = new pg.Client({
    connectionString: BASE_DATABASE_URL,
    connectionTimeoutMillis: 3_000,
  });
  try {
    await client.connect();
    await client.end();
  } catch (error: unknown) {
    throw new Error(
      `Integration tests need Postgres at ${BASE_DATABASE_URL} (${String(error)}). Start it: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`,
    );
  }
}

async function assertRedis(): Promise<Redis> {
  const redis = new Redis(REDIS_URL, {
    lazyConnect: true,
    connectTimeout: 3_000,
    maxRetriesPerRequest: 0,
  });
  redis.on("error", () => {});
  try {
    await redis.connect();
    await redis.ping();
    return redis;
  } catch (error: unknown) {
    redis.disconnect();
    throw new Error(
      `Integration tests need Redis at ${REDIS_URL} (${String(error)}). Start it: redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no`,
    );
  }
}

export default async function setup(project: TestProject) {
  await assertPostgres();
  const redis = await assertRedis();
  const runId = `${Date.now().toString(36)}_${process.pid}`;
  const databaseName = `lp_it_${runId}`;
  const ownerDatabaseUrl = withDatabase(BASE_DATABASE_URL, databaseName);
  const redisKeyPrefix = `lpt:${runId}:`;
  await createDatabase(ownerDatabaseUrl);
  await deploy({ ownerUrl: ownerDatabaseUrl, appRole: TEST_APPLICATION_ROLE });
  project.provide("databaseUrl", urlForRole(ownerDatabaseUrl, TEST_APPLICATION_ROLE));
  project.provide("ownerDatabaseUrl", ownerDatabaseUrl);
  project.provide("redisUrl", REDIS_URL);
  project.provide("redisKeyPrefix", redisKeyPrefix);

  return async () => {
    await dropDatabase(ownerDatabaseUrl);
    // Files that need a database of their own name it after the run's (helpers/test-database.ts).
    await dropDatabasesStartingWith(ownerDatabaseUrl, `${databaseName}_`);
    await deleteKeysUnder(redis, redisKeyPrefix);
    redis.disconnect();
  };
}
