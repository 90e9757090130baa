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
import { TEST_APPLICATION_ROLE, urlForRole } from "../../../scripts/db/app-role";
import {
  createDatabase,
  databaseNameOf,
  dropDatabase,
  withDatabase,
} from "../../../scripts/db/databases";
import { deploy } from "../../../scripts/db/migrate";

export interface TestDatabase {
  /** As the application role: what the code under test connects as. */
  readonly url: string;
  /** As the tables' owner. */
  readonly ownerUrl: string;
  readonly db: PrismaClient;
}

/** Creates the file's database before its tests and drops it after them. */
export function provideTestDatabase(): { current(): TestDatabase } {
  let database: TestDatabase | undefined;
  beforeAll(async () => {
    const runDatabase = inject("ownerDatabaseUrl");
    const ownerUrl = withDatabase(
      runDatabase,
      `${databaseNameOf(runDatabase)}_${randomBytes(3).toString("hex")}`,
    );
    await createDatabase(ownerUrl);
    await deploy({ ownerUrl, appRole: TEST_APPLICATION_ROLE });
    const url = urlForRole(ownerUrl, TEST_APPLICATION_ROLE);
    database = { url, ownerUrl, db: createPrisma({ databaseUrl: url, poolSize: 6 }) };
  });
  afterAll(async () => {
    if (database === undefined) return;
    await database.db.$disconnect();
    await dropDatabase(database.ownerUrl);
  });
  return {
    current() {
      if (database === undefined) throw new Error("the test database is not ready");
      return database;
    },
  };
}
