/**
 * Proves `prisma/migrations` and `prisma/schema.prisma` describe the same database.
 *
 * Introspection does not work through the driver adapter here, so the check builds both sides for
 * real: on two scratch databases it applies the committed migrations to one and the SQL of
 * `diff(empty -> schema.prisma)` to the other, then compares their catalogs (tables, columns with
 * types, nullability and defaults, indexes, constraints, enums). Triggers and functions, which
 * Prisma cannot describe (the audit log's append-only guard), live only in migrations and are not
 * compared.
 */
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import pg from "pg";
import { createDatabase, dropDatabase, executeSql, withDatabase } from "./databases";
import { applyMigrations, diffSchemas, MIGRATIONS_DIR, SCHEMA_PATH } from "./schema-engine";

/** name -> definition, for every object one side has. */
export type Catalog = Map<string, string>;

const CATALOG_QUERIES: readonly { kind: string; sql: string }[] = [
  {
    kind: "table",
    sql: `SELECT table_name AS name, 'table' AS def FROM information_schema.tables
          WHERE table_schema = 'public' AND table_type = 'BASE TABLE'
            AND table_name <> '_prisma_migrations'`,
  },
  {
    kind: "column",
    sql: `SELECT format('%I.%I', table_name, column_name) AS name,
                 concat_ws(' ', udt_name,
                   CASE WHEN character_maximum_length IS NOT NULL THEN '(' || character_maximum_length || ')' END,
                   CASE WHEN data_type = 'numeric' THEN '(' || numeric_precision || ',' || numeric_scale || ')' END,
                   CASE WHEN is_nullable = 'NO' THEN 'not null' ELSE 'null' END,
                   'default ' || coalesce(column_default, 'none')) AS def
          FROM information_schema.columns
          WHERE table_schema = 'public' AND table_name <> '_prisma_migrations'`,
  },
  {
    kind: "index",
    sql: `SELECT indexname AS name, indexdef AS def FROM pg_indexes
          WHERE schemaname = 'public' AND tablename <> '_prisma_migrations'`,
  },
  {
    kind: "constraint",
    sql: `SELECT format('%s.%s', rel.relname, con.conname) AS name,
                 pg_get_constraintdef(con.oid) AS def
          FROM pg_constraint con
          JOIN pg_class rel ON rel.oid = con.conrelid
          JOIN pg_namespace ns ON ns.oid = rel.relnamespace
          WHERE ns.nspname = 'public' AND rel.relname <> '_prisma_migrations'`,
  },
  {
    kind: "enum",
    sql: `SELECT t.typname AS name, string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder) AS def
          FROM pg_type t JOIN pg_enum e ON e.enumtypid = t.oid
          JOIN pg_namespace ns ON ns.oid = t.typnamespace
          WHERE ns.nspname = 'public' GROUP BY t.typname`,
  },
];

export async function readCatalog(databaseUrl: string): Promise<Catalog> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const catalog: Catalog = new Map();
    for (const { kind, sql } of CATALOG_QUERIES) {
      const { rows } = await client.query<{ name: string; def: string }>(sql);
      for (const row of rows) catalog.set(`${kind} ${row.name}`, row.def);
    }
    return catalog;
  } finally {
    await client.end();
  }
}

export interface Drift {
  /** Declared by schema.prisma, missing from the migrations: a model change without a migration. */
  onlyInSchema: string[];
  /** Created by the migrations, absent from schema.prisma: a migration without the model change. */
  onlyInMigrations: string[];
  /** Present on both sides with different definitions. */
  different: string[];
}

export function compareCatalogs(fromMigrations: Catalog, fromSchema: Catalog): Drift {
  const drift: Drift = { onlyInSchema: [], onlyInMigrations: [], different: [] };
  for (const [name, def] of fromSchema) {
    const other = fromMigrations.get(name);
    if (other === undefined) drift.onlyInSchema.push(`${name} (${def})`);
    else if (other !== def) {
      drift.different.push(`${name}: migrations give "${other}", schema.prisma gives "${def}"`);
    }
  }
  for (const [name, def] of fromMigrations) {
    if (!fromSchema.has(name)) drift.onlyInMigrations.push(`${name} (${def})`);
  }
  return drift;
}

export function hasDrift(drift: Drift): boolean {
  return drift.onlyInSchema.length + drift.onlyInMigrations.length + drift.different.length > 0;
}

/** A report a person can act on, naming which side is ahead. Empty string when in agreement. */
export function describeDrift(drift: Drift): string {
  const lines: string[] = [];
  if (drift.onlyInSchema.length > 0) {
    lines.push(
      "schema.prisma changed without a migration. It declares what no migration creates:",
      ...drift.onlyInSchema.map((item) => `  + ${item}`),
      "  Fix: npm run db:migration -- <name>   (writes the missing migration)",
    );
  }
  if (drift.onlyInMigrations.length > 0) {
    lines.push(
      "A migration changed the database without the model change. Migrations create what schema.prisma does not declare:",
      ...drift.onlyInMigrations.map((item) => `  - ${item}`),
      "  Fix: add it to prisma/schema.prisma, or add a migration that removes it.",
    );
  }
  if (drift.different.length > 0) {
    lines.push(
      "schema.prisma and the migrations disagree on:",
      ...drift.different.map((item) => `  ~ ${item}`),
      "  Fix: npm run db:migration -- <name> if schema.prisma is right; otherwise correct schema.prisma.",
    );
  }
  return lines.join("\n");
}

export interface DriftCheckOptions {
  /** Any database URL on the server to use; scratch databases are created beside it. */
  databaseUrl: string;
  schemaText?: string;
  migrationsDir?: string;
}

/** Builds both sides on scratch databases and compares them. The scratch databases are dropped. */
export async function checkDrift(options: DriftCheckOptions): Promise<Drift> {
  const schemaText = options.schemaText ?? (await readFile(SCHEMA_PATH, "utf8"));
  const suffix = randomBytes(4).toString("hex");
  const viaMigrations = withDatabase(options.databaseUrl, `lp_drift_m_${suffix}`);
  const viaSchema = withDatabase(options.databaseUrl, `lp_drift_s_${suffix}`);
  await createDatabase(viaMigrations);
  await createDatabase(viaSchema);
  try {
    await applyMigrations(viaMigrations, options.migrationsDir ?? MIGRATIONS_DIR);
    const sql = await diffSchemas(viaSchema, null, schemaText);
    await executeSql(viaSchema, sql);
    return compareCatalogs(await readCatalog(viaMigrations), await readCatalog(viaSchema));
  } finally {
    await dropDatabase(viaMigrations);
    await dropDatabase(viaSchema);
  }
}
