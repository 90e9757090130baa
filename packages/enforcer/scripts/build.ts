/**
 * Builds the package for use outside this workspace (`npm run build -w packages/enforcer`, and
 * before every `npm pack` as `prepack`): ESM JavaScript and `.d.ts` in `dist/`, one file per
 * source module, by the pinned TypeScript compiler, plus the example policy document. Inside the
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
  const example = "policy/fixtures/example-policy.json";
  mkdirSync(path.dirname(path.join(scratch, example)), { recursive: true });
  copyFileSync(path.join(PACKAGE_DIR, "src", example), path.join(scratch, example));
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
