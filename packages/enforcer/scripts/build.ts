/**
 * Builds the package for use outside this workspace (`npm run build -w packages/enforcer`, and
 * before every `npm pack` as `prepack`): ESM JavaScript and `.d.ts` in `dist/`, one file per
 * source module, by the pinned TypeScript compiler, plus the files the modules read at run time
 * (the example policy document, and the Redis store's Lua beside its loader). Inside the
 * workspace nothing reads `dist/`: tsconfig `paths` map the package's entry points to `src/`.
 *
 * Written to a scratch directory first and swapped in whole, so a failed build leaves the last
 * good one, and every written specifier is checked to name a file that exists.
 */
import {
  copyFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import { createPackageProgram, emitPackage, entryPoints, PACKAGE_DIR } from "./package-emit";

const dist = path.join(PACKAGE_DIR, "dist");
const scratch = path.join(PACKAGE_DIR, `dist.build-${process.pid}`);

rmSync(scratch, { recursive: true, force: true });
try {
  const program = createPackageProgram({ outDir: scratch });
  emitPackage(program, (file, text) => {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, text);
  });
  for (const asset of runtimeAssets()) {
    mkdirSync(path.dirname(path.join(scratch, asset)), { recursive: true });
    copyFileSync(path.join(PACKAGE_DIR, "src", asset), path.join(scratch, asset));
  }
  checkSpecifiers(scratch);
  for (const entry of entryPoints()) {
    for (const file of [entry.javascript, entry.types]) {
      readFileSync(path.join(scratch, path.relative("./dist", file)));
    }
  }
  rmSync(dist, { recursive: true, force: true });
  renameSync(scratch, dist);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
console.log(`built ${path.relative(process.cwd(), dist) || "dist"}`);

/**
 * The files of `src/` that modules read at run time, relative to `src/`: the example policy
 * document, and every `.lua` file (`limiter/stores/redis-decide-script.ts` reads its script with
 * `new URL("./redis-decide.lua", import.meta.url)`, so it must sit beside the built module).
 */
function runtimeAssets(): string[] {
  const source = path.join(PACKAGE_DIR, "src");
  const lua = listFiles(source).filter((file) => file.endsWith(".lua"));
  return ["policy/fixtures/example-policy.json", ...lua.map((file) => path.relative(source, file))];
}

/**
 * Every relative specifier in the output names a file of the output: what Node's loader (and
 * `nodenext` type checking) will look for.
 */
function checkSpecifiers(root: string): void {
  const pattern = /(?:from\s*|import\s*\(\s*)"(\.{1,2}\/[^"]+)"/g;
  const files = new Set(listFiles(root));
  for (const file of files) {
    if (!/\.(?:js|d\.ts)$/.test(file)) continue;
    const text = readFileSync(file, "utf8");
    for (const match of text.matchAll(pattern)) {
      const specifier = match[1] ?? "";
      const target = path.resolve(path.dirname(file), specifier);
      if (!/\.(?:js|json)$/.test(specifier) || !files.has(target)) {
        throw new Error(`${path.relative(root, file)} imports "${specifier}", not a built file`);
      }
    }
  }
}

function listFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name));
}
