/**
 * The API report: for each entry point package.json exports, every exported name with its
 * declaration as a consumer's compiler sees it (the `.d.ts` the pinned TypeScript compiler emits,
 * comments left out), and the declarations of the package's own types those reach without
 * exporting them. Checked in under `packages/enforcer/api/`, so any change to the public surface
 * shows in review.
 *
 *   npm run api:update    rewrite the reports from the source
 *   npm run lint:api      (part of npm run lint) fail when a report differs from the source, or
 *                         when tsconfig.json's paths do not map exactly the exported entry points
 *
 * `--reports <dir>` reads or writes the reports there instead (test/lint/api-report.test.ts).
 *
 * Written with the compiler the package is built with (`typescript` as pinned), not
 * `@microsoft/api-extractor`, which analyses with a TypeScript of its own bundling.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
import {
  createPackageProgram,
  type EntryPoint,
  emitPackage,
  entryPoints,
  PACKAGE_DIR,
  readPackageJson,
} from "./package-emit";

const DEFAULT_REPORT_DIR = path.join(PACKAGE_DIR, "api");
/**
 * The most names the root entry point may export: what a gateway needs (`createEnforcer`, the
 * middlewares, the decision and result types, the errors, the option types). Anything else
 * belongs to a subpath (`/limiter`, `/callers`, ...).
 */
export const MAX_ROOT_NAMES = 25;
const REPOSITORY_ROOT = path.resolve(PACKAGE_DIR, "../..");

/** The reports by file name (`index.api.md`, `limiter.api.md`, ...). */
export function buildReports(): Map<string, string> & { rootNames: readonly string[] } {
  const outDir = path.join(PACKAGE_DIR, "dist");
  const declarations = new Map<string, string>();
  emitPackage(
    createPackageProgram({ removeComments: true, emitDeclarationOnly: true }),
    (file, text) => {
      if (file.endsWith(".d.ts")) declarations.set(path.normalize(file), text);
    },
    { declarationsOnly: true, skipDiagnostics: true },
  );
  const entries = entryPoints();
  const typesOf = (entry: EntryPoint) => path.join(PACKAGE_DIR, entry.types);
  const program = ts.createProgram(entries.map(typesOf), declarationProgramOptions(outDir), {
    ...ts.createCompilerHost({}),
    fileExists: (file) => declarations.has(path.normalize(file)) || ts.sys.fileExists(file),
    // dist/ need not exist on disk: its directories are the emitted files'.
    directoryExists: (directory) =>
      ts.sys.directoryExists(directory) ||
      [...declarations.keys()].some((file) => file.startsWith(`${path.normalize(directory)}/`)),
    readFile: (file) => declarations.get(path.normalize(file)) ?? ts.sys.readFile(file),
    getSourceFile: (file, languageVersion) => {
      const text = declarations.get(path.normalize(file)) ?? ts.sys.readFile(file);
      return text === undefined ? undefined : ts.createSourceFile(file, text, languageVersion);
    },
  });
  const checker = program.getTypeChecker();
  const isOwn = (file: string) => declarations.has(path.normalize(file));
  const packageName = readPackageJson().name;
  const modules = entries.map((entry) => {
    const file = program.getSourceFile(typesOf(entry));
    const moduleSymbol = file === undefined ? undefined : checker.getSymbolAtLocation(file);
    if (moduleSymbol === undefined) throw new Error(`no module at ${entry.types}`);
    const name = entry.subpath === "." ? packageName : `${packageName}/${entry.subpath.slice(2)}`;
    return { entry, name, exports: checker.getExportsOfModule(moduleSymbol) };
  });
  // Where each symbol is exported (the first entry point that does): a report names these
  // instead of repeating their declarations.
  const exportedFrom = new Map<ts.Symbol, string>();
  for (const { name, exports } of modules) {
    for (const symbol of exports) {
      const target = resolveAlias(checker, symbol);
      if (!exportedFrom.has(target)) exportedFrom.set(target, name);
    }
  }
  const reports = Object.assign(new Map<string, string>(), {
    rootNames: (modules.find(({ entry }) => entry.subpath === ".")?.exports ?? []).map((symbol) =>
      symbol.getName(),
    ),
  });
  for (const { entry, name, exports } of modules) {
    reports.set(
      `${entry.subpath === "." ? "index" : entry.subpath.slice(2)}.api.md`,
      reportOf(name, checker, exports, isOwn, exportedFrom),
    );
  }
  return reports;
}

function resolveAlias(checker: ts.TypeChecker, symbol: ts.Symbol): ts.Symbol {
  return symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
}

function declarationProgramOptions(outDir: string): ts.CompilerOptions {
  return {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    types: ["node"],
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    baseUrl: outDir,
  };
}

interface Entry {
  readonly name: string;
  readonly isValue: boolean;
  readonly text: string;
}

function reportOf(
  name: string,
  checker: ts.TypeChecker,
  exports: readonly ts.Symbol[],
  isOwn: (file: string) => boolean,
  exportedFrom: ReadonlyMap<ts.Symbol, string>,
): string {
  const resolve = (symbol: ts.Symbol) => resolveAlias(checker, symbol);
  const exported = new Set(exports.map(resolve));
  const entries: Entry[] = exports.map((symbol) => {
    const target = resolve(symbol);
    const isTypeOnly = (symbol.declarations ?? []).some(
      (declaration) =>
        ts.isExportSpecifier(declaration) &&
        (declaration.isTypeOnly || declaration.parent.parent.isTypeOnly),
    );
    return {
      name: symbol.name,
      isValue: !isTypeOnly && (target.flags & ts.SymbolFlags.Value) !== 0,
      text: declarationText(target, symbol.name),
    };
  });
  entries.sort((a, b) => compare(a.name, b.name));

  // The package's own types the exported declarations name without this entry point exporting
  // them, and the ones those name in turn; a type another entry point exports is only named.
  const referenced = new Map<ts.Symbol, Entry>();
  const elsewhere = new Map<string, Set<string>>();
  const queue = exports.map(resolve);
  while (queue.length > 0) {
    const symbol = queue.shift();
    for (const declaration of symbol?.declarations ?? []) {
      visitReferences(declaration, (identifier) => {
        const found = checker.getSymbolAtLocation(identifier);
        if (found === undefined) return;
        const target = resolve(found);
        if (exported.has(target) || referenced.has(target)) return;
        if (target.flags & (ts.SymbolFlags.TypeParameter | ts.SymbolFlags.Property)) return;
        const declarations = target.declarations ?? [];
        if (!declarations.some((node) => isOwn(node.getSourceFile().fileName))) return;
        const home = exportedFrom.get(target);
        if (home !== undefined) {
          const names = elsewhere.get(home) ?? new Set<string>();
          names.add(target.name);
          elsewhere.set(home, names);
          return;
        }
        referenced.set(target, {
          name: target.name,
          isValue: false,
          text: declarationText(target),
        });
        queue.push(target);
      });
    }
  }
  const values = entries.filter((entry) => entry.isValue).length;
  const lines = [
    `# API report: ${name}`,
    "",
    "Written by `npm run api:update` (packages/enforcer/scripts/api-report.ts) from the declarations",
    "the pinned TypeScript compiler emits; `npm run lint` fails when it differs from the source.",
    "",
    `Exported names: ${entries.length} (${values} values, ${entries.length - values} types)`,
    "",
    "## Exported",
    "",
    "```ts",
    ...entries.map((entry) => entry.text),
    "```",
  ];
  if (elsewhere.size > 0) {
    lines.push("", "## Reached from the exports, exported by another entry point", "");
    for (const [home, names] of [...elsewhere].sort(([a], [b]) => compare(a, b))) {
      lines.push(`- \`${home}\`: ${[...names].sort(compare).join(", ")}`);
    }
  }
  if (referenced.size > 0) {
    const others = [...referenced.values()].sort((a, b) => compare(a.name, b.name));
    lines.push(
      "",
      "## Reached from the exports, not exported here",
      "",
      "```ts",
      ...others.map((entry) => entry.text),
      "```",
    );
  }
  return `${lines.join("\n")}\n`;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The declarations of `symbol` as the `.d.ts` writes them (a variable with its statement),
 * headed by the name it is exported as when that differs.
 */
function declarationText(symbol: ts.Symbol, exportedAs = symbol.name): string {
  const texts = (symbol.declarations ?? []).map((declaration) => {
    const node =
      ts.isVariableDeclaration(declaration) && ts.isVariableDeclarationList(declaration.parent)
        ? declaration.parent.parent
        : declaration;
    return node
      .getText()
      .replace(/^export (declare )?/, "")
      .replace(/^declare /, "");
  });
  const heading = exportedAs === symbol.name ? "" : `// exported as ${exportedAs}\n`;
  return `${heading}${texts.join("\n")}\n`;
}

/** Calls `visit` with every identifier that names a type or value in `node`'s declaration. */
function visitReferences(node: ts.Node, visit: (identifier: ts.Identifier) => void): void {
  const walk = (child: ts.Node): void => {
    if (ts.isTypeReferenceNode(child)) {
      visit(rightmost(child.typeName));
    } else if (ts.isExpressionWithTypeArguments(child) && ts.isIdentifier(child.expression)) {
      visit(child.expression);
    } else if (ts.isTypeQueryNode(child)) {
      visit(rightmost(child.exprName));
    }
    ts.forEachChild(child, walk);
  };
  walk(node);
}

function rightmost(name: ts.EntityName): ts.Identifier {
  return ts.isIdentifier(name) ? name : name.right;
}

/** tsconfig.json at the repository root maps exactly the exported entry points to their source. */
function checkWorkspacePaths(): string[] {
  const read = ts.readConfigFile(path.join(REPOSITORY_ROOT, "tsconfig.json"), ts.sys.readFile);
  const paths = (read.config?.compilerOptions?.paths ?? {}) as Record<string, string[]>;
  const { name, exports } = readPackageJson();
  const expected = new Map<string, string>();
  for (const [subpath, target] of Object.entries(exports)) {
    const built = typeof target === "string" ? target : target.default;
    const source = built.replace(/^\.\/dist\//, "./packages/enforcer/src/").replace(/\.js$/, ".ts");
    expected.set(subpath === "." ? name : `${name}/${subpath.slice(2)}`, source);
  }
  const problems: string[] = [];
  const mapped = Object.keys(paths).filter((key) => key === name || key.startsWith(`${name}/`));
  for (const [specifier, source] of expected) {
    const targets = paths[specifier];
    if (targets === undefined || targets.length !== 1 || targets[0] !== source) {
      problems.push(`tsconfig.json paths["${specifier}"] must be ["${source}"]`);
    }
  }
  for (const key of mapped) {
    if (!expected.has(key)) problems.push(`tsconfig.json paths["${key}"] is not an entry point`);
  }
  return problems;
}

function main(): void {
  const [mode, option, directory] = process.argv.slice(2);
  if (
    (mode !== "--check" && mode !== "--update") ||
    (option !== undefined && option !== "--reports")
  ) {
    console.error("usage: api-report.ts --check | --update [--reports <dir>]");
    process.exit(2);
  }
  const REPORT_DIR = directory === undefined ? DEFAULT_REPORT_DIR : path.resolve(directory);
  const reports = buildReports();
  if (mode === "--update") {
    rmSync(REPORT_DIR, { recursive: true, force: true });
    mkdirSync(REPORT_DIR, { recursive: true });
    for (const [file, text] of reports) writeFileSync(path.join(REPORT_DIR, file), text);
    console.log(`wrote ${reports.size} API reports to ${path.relative(process.cwd(), REPORT_DIR)}`);
    return;
  }
  const problems = checkWorkspacePaths();
  if (reports.rootNames.length > MAX_ROOT_NAMES) {
    problems.push(
      `the root entry point exports ${reports.rootNames.length} names, more than ${MAX_ROOT_NAMES}: move what a gateway does not need to a subpath`,
    );
  }
  const present = existsSync(REPORT_DIR) ? readdirSync(REPORT_DIR) : [];
  for (const file of present) {
    if (!reports.has(file)) problems.push(`api/${file} reports no entry point: remove it`);
  }
  for (const [file, text] of reports) {
    const target = path.join(REPORT_DIR, file);
    const current = existsSync(target) ? readFileSync(target, "utf8") : null;
    if (current === text) continue;
    problems.push(
      current === null
        ? `api/${file} is missing`
        : `api/${file} differs from the source:\n${firstDifference(current, text)}`,
    );
  }
  if (problems.length > 0) {
    console.error(
      `The enforcer's public API changed. Review it, then run npm run api:update and commit packages/enforcer/api/.\n\n${problems.join("\n\n")}`,
    );
    process.exit(1);
  }
  console.log(`API reports match the source (${reports.size} entry points)`);
}

/** The first line where `before` and `after` part, with its neighbours. */
function firstDifference(before: string, after: string): string {
  const a = before.split("\n");
  const b = after.split("\n");
  let index = 0;
  while (index < a.length && index < b.length && a[index] === b[index]) index++;
  const show = (lines: string[], sign: string) =>
    lines
      .slice(index, index + 3)
      .map((line) => `  ${sign} ${line}`)
      .join("\n");
  return `  at line ${index + 1}:\n${show(a, "-")}\n${show(b, "+")}`;
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === import.meta.filename) {
  main();
}
