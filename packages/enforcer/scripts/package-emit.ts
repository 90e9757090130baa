/**
 * What the build (`build.ts`) and the API report (`api-report.ts`) share: the entry points the
 * package exports, and the package compiled by the pinned TypeScript compiler, one output file
 * per source module.
 *
 * The source imports its modules without extensions (`"./enforcer/enforcer"`), as bundlers and
 * tsx resolve them; Node's ESM loader does not. The emit rewrites every relative specifier, in the
 * JavaScript and in the declarations, to the file it names (`"./enforcer/enforcer.js"`,
 * `"./policy/index.js"`), so the output runs on Node with no loader and type-checks under
 * `moduleResolution: "nodenext"`.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";

export const PACKAGE_DIR = path.resolve(import.meta.dirname, "..");
const SOURCE_DIR = path.join(PACKAGE_DIR, "src");

/** One entry point: its subpath, the source module behind it, and what it is built to. */
export interface EntryPoint {
  /** `"."`, `"./limiter"`, ... as in package.json's `exports`. */
  readonly subpath: string;
  /** Absolute path of the source module (`src/<name>.ts`). */
  readonly source: string;
  /** `./dist/...js`, as package.json says. */
  readonly javascript: string;
  /** `./dist/...d.ts`, as package.json says. */
  readonly types: string;
}

interface PackageJson {
  readonly name: string;
  readonly exports: Readonly<Record<string, string | { types: string; default: string }>>;
}

export function readPackageJson(): PackageJson {
  return JSON.parse(readFileSync(path.join(PACKAGE_DIR, "package.json"), "utf8")) as PackageJson;
}

/**
 * The module entry points package.json exports (data files such as the example policy aside),
 * each with its source: `./dist/<name>.js` is built from `./src/<name>.ts`.
 */
export function entryPoints(): EntryPoint[] {
  const entries: EntryPoint[] = [];
  for (const [subpath, target] of Object.entries(readPackageJson().exports)) {
    if (typeof target === "string") continue;
    const match = /^\.\/dist\/(.+)\.js$/.exec(target.default);
    if (match?.[1] === undefined || target.types !== `./dist/${match[1]}.d.ts`) {
      throw new Error(
        `package.json exports["${subpath}"] must be { types: "./dist/<name>.d.ts", default: "./dist/<name>.js" }`,
      );
    }
    const source = path.join(SOURCE_DIR, `${match[1]}.ts`);
    if (!existsSync(source)) {
      throw new Error(`package.json exports["${subpath}"] has no source: ${source} is missing`);
    }
    entries.push({ subpath, source, javascript: target.default, types: target.types });
  }
  return entries;
}

/**
 * The package as a program of the pinned compiler: the entry points and what they import, under
 * the package's tsconfig.json with emit turned on. Its diagnostics are the build's.
 */
export function createPackageProgram(overrides: ts.CompilerOptions = {}): ts.Program {
  const configPath = path.join(PACKAGE_DIR, "tsconfig.json");
  const read = ts.readConfigFile(configPath, (file) => ts.sys.readFile(file));
  if (read.error !== undefined) throw new Error(formatDiagnostics([read.error]));
  const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, PACKAGE_DIR);
  const options: ts.CompilerOptions = {
    ...parsed.options,
    noEmit: false,
    declaration: true,
    rootDir: SOURCE_DIR,
    outDir: path.join(PACKAGE_DIR, "dist"),
    incremental: false,
    sourceMap: false,
    ...overrides,
  };
  const ambient = path.join(SOURCE_DIR, "limiter/stores/cluster-key-slot.d.ts");
  return ts.createProgram([...entryPoints().map((entry) => entry.source), ambient], options);
}

export function formatDiagnostics(diagnostics: readonly ts.Diagnostic[]): string {
  return ts.formatDiagnostics(diagnostics, {
    getCanonicalFileName: (file) => file,
    getCurrentDirectory: () => PACKAGE_DIR,
    getNewLine: () => "\n",
  });
}

/**
 * Emits `program` through `writeFile` with every relative module specifier rewritten to the
 * output file it names. Throws on any compiler error (unless `skipDiagnostics`: the API report,
 * which runs beside the type check, does not repeat it).
 */
export function emitPackage(
  program: ts.Program,
  writeFile: ts.WriteFileCallback,
  options: { readonly declarationsOnly?: boolean; readonly skipDiagnostics?: boolean } = {},
): void {
  const diagnostics = options.skipDiagnostics === true ? [] : ts.getPreEmitDiagnostics(program);
  if (diagnostics.length > 0) throw new Error(formatDiagnostics(diagnostics));
  const rewrite = specifierRewriter();
  const result = program.emit(undefined, writeFile, undefined, options.declarationsOnly ?? false, {
    before: [rewrite],
    afterDeclarations: [
      (context) => {
        const inFile = rewrite(context);
        return (node) => (ts.isSourceFile(node) ? inFile(node) : node);
      },
    ],
  });
  if (result.diagnostics.length > 0) throw new Error(formatDiagnostics(result.diagnostics));
}

/**
 * `specifier`, relative to `fromFile`, as the emitted file it names: `x` becomes `x.js` when
 * `x.ts` exists, `x/index.js` when `x/index.ts` does; anything else (a `.json` file, a package)
 * stays as it is.
 */
export function emittedSpecifier(fromFile: string, specifier: string): string {
  if (!specifier.startsWith("./") && !specifier.startsWith("../")) return specifier;
  const target = path.resolve(path.dirname(fromFile), specifier);
  if (existsSync(`${target}.ts`)) return `${specifier}.js`;
  if (existsSync(path.join(target, "index.ts"))) return `${specifier}/index.js`;
  return specifier;
}

function specifierRewriter(): ts.TransformerFactory<ts.SourceFile> {
  return (context) => {
    const { factory } = context;
    return (root) => {
      const fileName = root.fileName;
      const literal = (node: ts.Expression): ts.StringLiteral | null => {
        if (!ts.isStringLiteral(node)) return null;
        const rewritten = emittedSpecifier(fileName, node.text);
        return rewritten === node.text ? null : factory.createStringLiteral(rewritten);
      };
      const visit = (node: ts.Node): ts.Node => {
        if (ts.isImportDeclaration(node)) {
          const specifier = literal(node.moduleSpecifier);
          if (specifier !== null) {
            return factory.updateImportDeclaration(
              node,
              node.modifiers,
              node.importClause,
              specifier,
              node.attributes,
            );
          }
        } else if (ts.isExportDeclaration(node) && node.moduleSpecifier !== undefined) {
          const specifier = literal(node.moduleSpecifier);
          if (specifier !== null) {
            return factory.updateExportDeclaration(
              node,
              node.modifiers,
              node.isTypeOnly,
              node.exportClause,
              specifier,
              node.attributes,
            );
          }
        } else if (
          ts.isImportTypeNode(node) &&
          ts.isLiteralTypeNode(node.argument) &&
          ts.isStringLiteral(node.argument.literal)
        ) {
          const specifier = literal(node.argument.literal);
          if (specifier !== null) {
            return factory.updateImportTypeNode(
              node,
              factory.createLiteralTypeNode(specifier),
              node.attributes,
              node.qualifier,
              node.typeArguments?.map((argument) => ts.visitNode(argument, visit, ts.isTypeNode)),
              node.isTypeOf,
            );
          }
        }
        return ts.visitEachChild(node, visit, context);
      };
      return ts.visitEachChild(root, visit, context);
    };
  };
}
