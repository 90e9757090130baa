/**
 * Prisma's schema engine, compiled to WebAssembly, driven through the `pg` driver adapter. It writes
 * migration SQL from `schema.prisma` and applies `prisma/migrations` exactly as
 * `prisma migrate deploy` does (same `_prisma_migrations` rows and checksums), without the native
 * engine binary that cannot be downloaded here.
 *
 * Node 20 cannot `import` a .wasm file, so the module is instantiated by hand.
 */
import { readdir, readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { PrismaPg } from "@prisma/adapter-pg";
import {
  bindMigrationAwareSqlAdapterFactory,
  DriverAdapterError,
} from "@prisma/driver-adapter-utils";
import type { MigrationList, SchemaEngine } from "@prisma/schema-engine-wasm";
import * as wasmBindings from "@prisma/schema-engine-wasm/schema_engine_bg";
import pg from "pg";

export const ROOT = path.resolve(import.meta.dirname, "../..");
export const SCHEMA_PATH = path.join(ROOT, "prisma/schema.prisma");
export const MIGRATIONS_DIR = path.join(ROOT, "prisma/migrations");
const NO_FILTERS = { externalTables: [], externalEnums: [] };

interface WasmGlue {
  __wbg_set_wasm(exports: WebAssembly.Exports): void;
}

let initialised: Promise<void> | undefined;

function initWasm(): Promise<void> {
  initialised ??= (async () => {
    const require = createRequire(import.meta.url);
    const entry = require.resolve("@prisma/schema-engine-wasm");
    const bytes = await readFile(entry.replace(/schema_engine\.js$/, "schema_engine_bg.wasm"));
    const imports = {
      "./schema_engine_bg.js": wasmBindings as unknown as WebAssembly.ModuleImports,
    };
    const { instance } = await WebAssembly.instantiate(bytes, imports);
    (wasmBindings as unknown as WasmGlue).__wbg_set_wasm(instance.exports);
    const start = instance.exports.__wbindgen_start;
    if (typeof start === "function") start();
  })();
  return initialised;
}

/**
 * The pg adapter runs a migration script by splitting it on ";", which breaks any function body
 * (the audit log's trigger). The native engine sends the script whole; so do we. A multi-statement
 * simple query runs in one implicit transaction, so a failing migration leaves nothing half-applied.
 */
class WholeScriptPg extends PrismaPg {
  override async connect(): Promise<PgAdapter> {
    return sendScriptsWhole(await super.connect());
  }
  override async connectToShadowDb(): Promise<PgAdapter> {
    return sendScriptsWhole(await super.connectToShadowDb());
  }
}

type PgAdapter = Awaited<ReturnType<PrismaPg["connect"]>>;

function sendScriptsWhole(adapter: PgAdapter): PgAdapter {
  adapter.executeScript = async (script: string) => {
    try {
      await adapter.underlyingDriver().query(script);
    } catch (error: unknown) {
      const pgError = error as { code?: string; severity?: string; message?: string };
      throw new DriverAdapterError({
        kind: "postgres",
        code: pgError.code ?? "N/A",
        severity: pgError.severity ?? "ERROR",
        message: pgError.message ?? String(error),
        detail: undefined,
        column: undefined,
        hint: undefined,
      });
    }
  };
  return adapter;
}

export interface EngineHandle {
  engine: SchemaEngine;
  close(): Promise<void>;
}

/** An engine bound to the database at `databaseUrl`. Close it when done. */
export async function openEngine(databaseUrl: string, schemaText?: string): Promise<EngineHandle> {
  await initWasm();
  const datamodel = schemaText ?? (await readFile(SCHEMA_PATH, "utf8"));
  // Our own pool, so closing the engine really closes its connection (an embedded Postgres serves
  // one connection at a time, and the next step needs it).
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  pool.on("error", () => {});
  const factory = new WholeScriptPg(pool);
  const adapter = bindMigrationAwareSqlAdapterFactory(factory);
  const logs: string[] = [];
  const engine = await wasmBindings.SchemaEngine.new(
    { datamodels: [["schema.prisma", datamodel]] },
    (line: string) => logs.push(line),
    adapter,
  );
  return {
    engine,
    async close() {
      engine.free();
      await pool.end();
    },
  };
}

/** SQL that takes a database from `fromSchema` (or nothing) to `toSchema`; empty when equal. */
export async function diffSchemas(
  databaseUrl: string,
  fromSchema: string | null,
  toSchema: string,
): Promise<string> {
  const { engine, close } = await openEngine(databaseUrl, toSchema);
  try {
    const result = await engine.diff({
      from:
        fromSchema === null
          ? { tag: "empty" }
          : { tag: "schemaDatamodel", files: [{ path: "schema.prisma", content: fromSchema }] },
      to: { tag: "schemaDatamodel", files: [{ path: "schema.prisma", content: toSchema }] },
      script: true,
      exitCode: null,
      filters: NO_FILTERS,
    });
    return result.stdout ?? "";
  } finally {
    await close();
  }
}

export interface MigrationOnDisk {
  name: string;
  sql: string;
}

/** The committed migrations, oldest first (directory names sort by their timestamp prefix). */
export async function readMigrations(dir = MIGRATIONS_DIR): Promise<MigrationOnDisk[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  const names = entries
    .filter((entry) => entry.isDirectory() && /^\d{14}_[a-z0-9_]+$/.test(entry.name))
    .map((entry) => entry.name)
    .sort();
  return Promise.all(
    names.map(async (name) => ({
      name,
      sql: await readFile(path.join(dir, name, "migration.sql"), "utf8"),
    })),
  );
}

export async function migrationList(dir = MIGRATIONS_DIR): Promise<MigrationList> {
  const migrations = await readMigrations(dir);
  const lock = await readFile(path.join(dir, "migration_lock.toml"), "utf8").catch(() => null);
  return {
    baseDir: dir,
    lockfile: { path: "migration_lock.toml", content: lock },
    shadowDbInitScript: "",
    migrationDirectories: migrations.map((migration) => ({
      path: migration.name,
      migrationFile: {
        path: "migration.sql",
        content: { tag: "ok", value: migration.sql },
      },
    })),
  };
}

/** Applies every committed migration not yet in `_prisma_migrations`; returns the names applied. */
export async function applyMigrations(
  databaseUrl: string,
  dir = MIGRATIONS_DIR,
): Promise<string[]> {
  const { engine, close } = await openEngine(databaseUrl);
  try {
    const output = await engine.applyMigrations({
      migrationsList: await migrationList(dir),
      filters: NO_FILTERS,
    });
    return output.appliedMigrationNames;
  } finally {
    await close();
  }
}
