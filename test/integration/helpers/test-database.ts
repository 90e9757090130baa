/**
 * A database of this test file's own, migrated from prisma/migrations and dropped afterwards.
 * Files run in parallel; policy tests compare the row counts of every table and the policy
 * version before and after a refused change, which only means something when no other file writes
 * to the same tables meanwhile.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, inject } from "vitest";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { createPrisma } from "@/lib/server/db";
import {
  createDatabase,
  databaseNameOf,
  dropDatabase,
  withDatabase,
} from "../../../scripts/db/databases";
import { applyMigrations } from "../../../scripts/db/schema-engine";

export interface TestDatabase {
  readonly url: string;
  readonly db: PrismaClient;
}

/** Creates the file's database before its tests and drops it after them. */
export function provideTestDatabase(): { current(): TestDatabase } {
  let database: TestDatabase | undefined;
  beforeAll(async () => {
    const runDatabase = inject("databaseUrl");
    const url = withDatabase(
      runDatabase,
      `${databaseNameOf(runDatabase)}_${randomBytes(3).toString("hex")}`,
    );
    await createDatabase(url);
    await applyMigrations(url);
    database = { url, db: createPrisma({ databaseUrl: url, poolSize: 6 }) };
  });
  afterAll(async () => {
    if (database === undefined) return;
    await database.db.$disconnect();
    await dropDatabase(database.url);
  });
  return {
    current() {
      if (database === undefined) throw new Error("the test database is not ready");
      return database;
    },
  };
}
