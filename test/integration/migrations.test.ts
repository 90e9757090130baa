import { createHash } from "node:crypto";
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, describe, expect, inject, it } from "vitest";
import { checkDrift, describeDrift } from "../../scripts/db/drift";
import { MIGRATIONS_DIR, readMigrations, SCHEMA_PATH } from "../../scripts/db/schema-engine";

const databaseUrl = inject("ownerDatabaseUrl");
const scratchDirs: string[] = [];

async function copyOfMigrations(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), "lp-migrations-"));
  scratchDirs.push(dir);
  await cp(MIGRATIONS_DIR, dir, { recursive: true });
  return dir;
}

afterAll(async () => {
  await Promise.all(scratchDirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe("schema.prisma and prisma/migrations", () => {
  it("describe the same database", async () => {
    const drift = await checkDrift({ databaseUrl });
    // On failure this prints which side is ahead and the command that fixes it.
    expect(describeDrift(drift)).toBe("");
  });

  it("a model change without a migration is reported as such", async () => {
    const schema = await readFile(SCHEMA_PATH, "utf8");
    const changed = schema.replace(
      /model AuditEntry \{/,
      "model AuditEntry {\n  addedWithoutMigration String?",
    );
    const drift = await checkDrift({ databaseUrl, schemaText: changed });
    expect(drift.onlyInSchema).toEqual([
      expect.stringContaining('column "AuditEntry"."addedWithoutMigration"'),
    ]);
    expect(drift.onlyInMigrations).toEqual([]);
    expect(describeDrift(drift)).toMatch(/^schema\.prisma changed without a migration/);
  });

  it("a migration without the model change is reported as such", async () => {
    const dir = await copyOfMigrations();
    const extra = path.join(dir, "29991231000000_unmodelled_column");
    await mkdir(extra);
    await writeFile(
      path.join(extra, "migration.sql"),
      'ALTER TABLE "AuditEntry" ADD COLUMN "notInModel" INTEGER;\n',
    );
    const drift = await checkDrift({ databaseUrl, migrationsDir: dir });
    expect(drift.onlyInMigrations).toEqual([
      expect.stringContaining('column "AuditEntry"."notInModel"'),
    ]);
    expect(drift.onlyInSchema).toEqual([]);
    expect(describeDrift(drift)).toMatch(
      /^A migration changed the database without the model change/,
    );
  });

  it("are recorded in _prisma_migrations exactly as `prisma migrate deploy` records them", async () => {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      const { rows } = await client.query<{ migration_name: string; checksum: string }>(
        "SELECT migration_name, checksum FROM _prisma_migrations WHERE finished_at IS NOT NULL ORDER BY migration_name",
      );
      const onDisk = await readMigrations();
      expect(rows).toEqual(
        onDisk.map((migration) => ({
          migration_name: migration.name,
          checksum: createHash("sha256").update(migration.sql).digest("hex"),
        })),
      );
    } finally {
      await client.end();
    }
  });
});
