/**
 * The layer rules of `npm run lint` (.dependency-cruiser.cjs) catch what they promise: each
 * deliberate violation below, written into a scratch tree with the repository's own layout, is
 * reported under its rule's name, and the allowed imports are not.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");
const DEPCRUISE = path.join(ROOT, "node_modules/.bin/depcruise");

const FILES: Readonly<Record<string, string>> = {
  "tsconfig.json": JSON.stringify({
    compilerOptions: { module: "esnext", moduleResolution: "bundler", paths: { "@/*": ["./*"] } },
  }),
  // limiter-imports-io
  "packages/enforcer/src/limiter/reads-files.ts":
    'import { readFileSync } from "node:fs";\nexport const read = readFileSync;\n',
  // allowed: a store is an adapter, it may do I/O
  "packages/enforcer/src/limiter/stores/fine.ts":
    'import { once } from "node:events";\nexport const wait = once;\n',
  // limiter-imports-enforcer: a store reaching up into the enforcer runtime
  "packages/enforcer/src/limiter/stores/uses-runtime.ts":
    'import { callWithTimeout } from "../../enforcer/timers";\nexport const call = callWithTimeout;\n',
  "packages/enforcer/src/enforcer/timers.ts": "export const callWithTimeout = 1;\n",
  // policy-imports-io
  "packages/enforcer/src/policy/hashes.ts":
    'import { createHash } from "node:crypto";\nexport const hash = createHash;\n',
  // package-imports-app
  "packages/enforcer/src/enforcer/uses-app.ts":
    'import { env } from "../../../../lib/server/env";\nexport const used = env;\n',
  "lib/server/env.ts": "export const env = 1;\n",
  // components-import-control-internals (the entry point is allowed)
  "components/form.tsx":
    'import { service } from "@/lib/control/tier/update-tier";\nimport { entry } from "@/lib/control";\nexport const both = [service, entry];\n',
  "lib/control/tier/update-tier.ts": "export const service = 1;\n",
  "lib/control/index.ts": "export const entry = 2;\n",
  // control-imports-upper-layer: the composition root, the console and the app, type-only included
  "lib/control/tier/list-tiers.ts":
    'import { controlDeps } from "@/lib/server/composition";\nexport const deps = controlDeps;\n',
  "lib/server/composition.ts": "export const controlDeps = () => 1;\n",
  "lib/control/alerts/alert-rules.ts":
    'import type { Shown } from "../../console/format";\nexport type Rule = Shown;\n',
  "lib/console/format.ts":
    'import { service } from "@/lib/control/tier/update-tier";\nexport type Shown = string;\nexport const used = service;\n',
  "lib/control/tier/get-tier.ts":
    'import { page } from "@/app/tiers/page";\nexport const shown = page;\n',
  "app/tiers/page.tsx": "export const page = 1;\n",
  // no-circular, through type-only imports
  "lib/console/a.ts": 'import type { B } from "./b";\nexport type A = { b?: B };\n',
  "lib/console/b.ts": 'import type { A } from "./a";\nexport type B = { a?: A };\n',
  // client-modules-reach-server: a domain schema that reaches node:crypto through another module
  "lib/control/change-context.ts": 'import { newId } from "./ids";\nexport const reason = newId;\n',
  "lib/control/ids.ts":
    'import { randomBytes } from "node:crypto";\nexport const newId = () => randomBytes(4);\n',
  // outside-imports-package-internals (the subpath entry point is allowed)
  "lib/uses-internals.ts":
    'import { step } from "../packages/enforcer/src/limiter/layered";\nimport { open } from "../packages/enforcer/src/limiter/index";\nexport const both = [step, open];\n',
  "packages/enforcer/src/limiter/layered.ts": "export const step = 1;\n",
  "packages/enforcer/src/limiter/index.ts": "export const open = 2;\n",
};

interface Violation {
  readonly rule: { readonly name: string };
  readonly from: string;
  readonly to: string;
}

let scratch: string;
let violations: readonly Violation[];
let exitCode: number | null;

beforeAll(() => {
  scratch = mkdtempSync(path.join(tmpdir(), "lp-layers-"));
  for (const [file, text] of Object.entries(FILES)) {
    mkdirSync(path.dirname(path.join(scratch, file)), { recursive: true });
    writeFileSync(path.join(scratch, file), text);
  }
  const cruise = (outputType: string) =>
    spawnSync(
      DEPCRUISE,
      [
        ...["packages", "lib", "components", "app"],
        ...["--config", path.join(ROOT, ".dependency-cruiser.cjs"), "--output-type", outputType],
      ],
      { cwd: scratch, encoding: "utf8" },
    );
  // The `err` reporter is what `npm run lint` uses: its exit status fails the step.
  exitCode = cruise("err").status;
  const output = JSON.parse(cruise("json").stdout) as { summary: { violations: Violation[] } };
  violations = output.summary.violations;
  // Two depcruise runs over a scratch tree: seconds on a quiet machine, far more on a busy one.
}, 120_000);

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
});

function reported(rule: string): string[] {
  return violations
    .filter((violation) => violation.rule.name === rule)
    .map((violation) => `${violation.from} -> ${violation.to}`);
}

describe("the layer rules in npm run lint", () => {
  it("fail the lint step when a rule is broken", () => {
    expect(exitCode).not.toBe(0);
  });

  it("refuse I/O in the limiter core, and allow it in its stores", () => {
    expect(reported("limiter-imports-io")).toEqual([
      "packages/enforcer/src/limiter/reads-files.ts -> fs",
    ]);
  });

  it("refuse the limiter importing the rest of the package, its stores included", () => {
    expect(reported("limiter-imports-enforcer")).toEqual([
      "packages/enforcer/src/limiter/stores/uses-runtime.ts -> packages/enforcer/src/enforcer/timers.ts",
    ]);
  });

  it("refuse node:* modules in the policy model", () => {
    expect(reported("policy-imports-io")).toEqual([
      "packages/enforcer/src/policy/hashes.ts -> crypto",
    ]);
  });

  it("refuse the package importing the app", () => {
    expect(reported("package-imports-app")).toEqual([
      "packages/enforcer/src/enforcer/uses-app.ts -> lib/server/env.ts",
    ]);
  });

  it("refuse components reaching into lib/control's modules, and allow its entry point", () => {
    expect(reported("components-import-control-internals")).toEqual([
      "components/form.tsx -> lib/control/tier/update-tier.ts",
    ]);
  });

  it("refuse lib/control importing the composition root, the console or the app, and allow the console importing lib/control", () => {
    expect(reported("control-imports-upper-layer").sort()).toEqual([
      "lib/control/alerts/alert-rules.ts -> lib/console/format.ts",
      "lib/control/tier/get-tier.ts -> app/tiers/page.tsx",
      "lib/control/tier/list-tiers.ts -> lib/server/composition.ts",
    ]);
  });

  it("refuse import cycles, type-only ones included", () => {
    // Reported once, at the edge where the cruise closes the cycle.
    expect(reported("no-circular")).toHaveLength(1);
    expect(reported("no-circular")[0]).toMatch(
      /^lib\/console\/[ab]\.ts -> lib\/console\/[ab]\.ts$/,
    );
  });

  it("refuse server code reached, however indirectly, from the modules client components use", () => {
    expect(reported("client-modules-reach-server")).toEqual([
      "lib/control/change-context.ts -> crypto",
    ]);
  });

  it("refuse imports of the package's internal modules from outside, and allow its entry points", () => {
    expect(reported("outside-imports-package-internals")).toEqual([
      "lib/uses-internals.ts -> packages/enforcer/src/limiter/layered.ts",
    ]);
  });
});
