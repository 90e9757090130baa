/**
 * The migration runner drives Prisma's WebAssembly schema engine through private glue (see
 * `findGlueProblems`). These tests fail loudly, naming the part, when an upgrade moves it.
 */
import { describe, expect, it } from "vitest";
import { type EngineGlue, findGlueProblems, installedEngineGlue } from "./schema-engine";

describe("the schema engine's private glue", () => {
  it("is as the runner was written against (an upgrade that moves it names what changed)", async () => {
    expect(findGlueProblems(await installedEngineGlue())).toEqual([]);
  });

  it("names each part that changed", async () => {
    const installed = await installedEngineGlue();
    const { __wbg_set_wasm: _setWasm, SchemaEngine: _engine, ...rest } = installed.bindings;
    const firstImport = WebAssembly.Module.imports(installed.wasm)[0];
    if (firstImport === undefined) throw new Error("the engine's .wasm imports nothing");
    const { [firstImport.name]: _dropped, ...withoutImport } = rest;
    const changed: EngineGlue = {
      bindings: withoutImport,
      wasm: installed.wasm,
      adapter: { executeScript: () => undefined },
      bindAdapter: undefined,
    };
    expect(findGlueProblems(changed)).toEqual([
      "@prisma/schema-engine-wasm/schema_engine_bg no longer exports the function __wbg_set_wasm (wasm-bindgen's hook that hands it the instantiated module)",
      "@prisma/schema-engine-wasm/schema_engine_bg no longer exports the class SchemaEngine with a static new(options, log, adapter)",
      `schema_engine_bg.wasm imports "${firstImport.name}", which schema_engine_bg no longer exports`,
      "@prisma/adapter-pg's connected adapter no longer has the method underlyingDriver() (replaced here to send migration scripts whole)",
      "@prisma/driver-adapter-utils no longer exports the function bindMigrationAwareSqlAdapterFactory",
    ]);
  });

  it("names a missing engine method", async () => {
    const installed = await installedEngineGlue();
    class SchemaEngine {
      static new() {}
      diff() {}
      free() {}
    }
    expect(
      findGlueProblems({ ...installed, bindings: { ...installed.bindings, SchemaEngine } }),
    ).toEqual(["SchemaEngine no longer has the method applyMigrations()"]);
  });
});
