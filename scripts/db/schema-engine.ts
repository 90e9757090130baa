/**
 * Prisma's schema engine, compiled to WebAssembly, driven through the `pg` driver adapter. It writes
 * migration SQL from `schema.prisma` and applies `prisma/migrations` exactly as
 * `prisma migrate deploy` does (same `_prisma_migrations` rows and checksums), without the native
 * engine binary that cannot be downloaded here.
 *
 * Node 20 cannot `import` a .wasm file, so the module is instantiated by hand, through private
 * glue that `findGlueProblems` checks before the engine is used. Every migration step (deploy,
 * new, check, status, drift, the benches' databases) goes through this module.
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

/** The module name the engine's .wasm imports its JavaScript glue under. */
const GLUE_MODULE = "./schema_engine_bg.js";
/** The engine methods this runner calls. */
const ENGINE_METHODS = ["diff", "applyMigrations", "free"] as const;

/**
 * The private parts of the schema engine package and the pg adapter this runner relies on, none of
 * them a public API: the wasm-bindgen glue module (`schema_engine_bg`, instantiated by hand), the
 * .wasm file beside the package's entry, the names the .wasm imports, the engine's methods, and
 * the adapter's `executeScript` and `underlyingDriver` (replaced to send scripts whole).
 */
export interface EngineGlue {
  readonly bindings: Readonly<Record<string, unknown>>;
  readonly wasm: WebAssembly.Module;
  /** An adapter from `PrismaPg.connect()` (it opens no connection until a query). */
  readonly adapter: object;
  readonly bindAdapter: unknown;
}

/**
 * What changed in the glue, one line each naming the part and what this runner expects of it;
 * empty when everything is as this runner was written against. Run before the engine is used
 * (`initWasm`) and by scripts/db/schema-engine.test.ts, so an upgrade of `@prisma/schema-engine-wasm`,
 * `@prisma/adapter-pg` or `@prisma/driver-adapter-utils` that moves them fails loudly, by name.
 */
export function findGlueProblems(glue: EngineGlue): string[] {
  const problems: string[] = [];
  const bindings = glue.bindings;
  if (typeof bindings.__wbg_set_wasm !== "function") {
    problems.push(
      "@prisma/schema-engine-wasm/schema_engine_bg no longer exports the function __wbg_set_wasm (wasm-bindgen's hook that hands it the instantiated module)",
    );
  }
  const engine =
    typeof bindings.SchemaEngine === "function"
      ? (bindings.SchemaEngine as unknown as { new?: unknown; prototype?: Record<string, unknown> })
      : null;
  if (engine === null || typeof engine.new !== "function") {
    problems.push(
      "@prisma/schema-engine-wasm/schema_engine_bg no longer exports the class SchemaEngine with a static new(options, log, adapter)",
    );
  } else {
    for (const method of ENGINE_METHODS) {
      if (typeof engine.prototype?.[method] !== "function") {
        problems.push(`SchemaEngine no longer has the method ${method}()`);
      }
    }
  }
  for (const wanted of WebAssembly.Module.imports(glue.wasm)) {
    if (wanted.module !== GLUE_MODULE) {
      problems.push(
        `schema_engine_bg.wasm imports "${wanted.name}" from "${wanted.module}", not from "${GLUE_MODULE}"`,
      );
    } else if (!(wanted.name in bindings)) {
      problems.push(
        `schema_engine_bg.wasm imports "${wanted.name}", which schema_engine_bg no longer exports`,
      );
    }
  }
  const adapter = glue.adapter as Record<string, unknown>;
  for (const member of ["executeScript", "underlyingDriver"]) {
    if (typeof adapter[member] !== "function") {
      problems.push(
        `@prisma/adapter-pg's connected adapter no longer has the method ${member}() (replaced here to send migration scripts whole)`,
      );
    }
  }
  if (typeof glue.bindAdapter !== "function") {
    problems.push(
      "@prisma/driver-adapter-utils no longer exports the function bindMigrationAwareSqlAdapterFactory",
    );
  }
  return problems;
}

/** The .wasm file beside the package's entry (`schema_engine.js`). */
async function readEngineWasm(): Promise<Uint8Array<ArrayBuffer>> {
  const require = createRequire(import.meta.url);
  const entry = require.resolve("@prisma/schema-engine-wasm");
  if (!entry.endsWith("schema_engine.js")) {
    throw new Error(
      `The Prisma schema engine glue changed: @prisma/schema-engine-wasm's entry is ${path.basename(entry)}, not schema_engine.js, so schema_engine_bg.wasm cannot be found beside it`,
    );
  }
  return new Uint8Array(
    await readFile(entry.replace(/schema_engine\.js$/, "schema_engine_bg.wasm")),
  );
}

/** The glue as installed, for {@link findGlueProblems}. */
export async function installedEngineGlue(bytes?: Uint8Array<ArrayBuffer>): Promise<EngineGlue> {
  const wasm = await WebAssembly.compile(bytes ?? (await readEngineWasm()));
  const pool = new pg.Pool({ max: 1 });
  try {
    return {
      bindings: wasmBindings as unknown as Record<string, unknown>,
      wasm,
      // Opens no connection: the adapter only wraps the pool.
      adapter: await new PrismaPg(pool).connect(),
      bindAdapter: bindMigrationAwareSqlAdapterFactory,
    };
  } finally {
    await pool.end();
  }
}

let initialised: Promise<void> | undefined;

function initWasm(): Promise<void> {
  initialised ??= (async () => {
    const bytes = await readEngineWasm();
    const problems = findGlueProblems(await installedEngineGlue(bytes));
    if (problems.length > 0) {
      throw new Error(
        `The Prisma schema engine glue changed; scripts/db/schema-engine.ts needs updating:\n- ${problems.join("\n- ")}`,
      );
    }
    const imports = { [GLUE_MODULE]: wasmBindings as unknown as WebAssembly.ModuleImports };
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
