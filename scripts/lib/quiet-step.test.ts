import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { nextBuildLines, npmInstallLines, progressLine, runQuietly } from "./quiet-step.mjs";

// A real `next build` of this console, as npm run up used to print it whole.
const NEXT_BUILD = readFileSync(
  path.join(import.meta.dirname, "fixtures", "next-build-output.txt"),
  "utf8",
);

describe("nextBuildLines", () => {
  it("keeps how long compiling took and drops the route table and the telemetry notice", () => {
    expect(NEXT_BUILD).toContain("Route (app)");
    expect(nextBuildLines(NEXT_BUILD)).toEqual(["✓ Compiled successfully in 3.0min"]);
  });

  it("keeps every warning and error", () => {
    const output = [
      "▲ Next.js 16.4.6 (Turbopack)",
      " ⚠ Invalid next.config.ts options detected: ",
      "Failed to compile.",
      "./app/page.tsx:3:1 Type error: Cannot find name 'x'.",
      "Route (app)",
      "┌ ƒ /",
    ].join("\n");
    expect(nextBuildLines(output)).toEqual([
      "⚠ Invalid next.config.ts options detected:",
      "Failed to compile.",
      "./app/page.tsx:3:1 Type error: Cannot find name 'x'.",
    ]);
  });
});

describe("npmInstallLines", () => {
  it("never hides a warning: an engine mismatch is shown as npm wrote it, with the summary", () => {
    const output = [
      "npm warn EBADENGINE Unsupported engine {",
      "npm warn EBADENGINE   package: '@prisma/streams-local@0.1.11',",
      "npm warn EBADENGINE }",
      "",
      "\u001b[1madded 1 package, removed 7 packages, and changed 1 package in 12s\u001b[22m",
    ].join("\n");
    expect(npmInstallLines(output)).toEqual([
      "npm warn EBADENGINE Unsupported engine {",
      "npm warn EBADENGINE   package: '@prisma/streams-local@0.1.11',",
      "npm warn EBADENGINE }",
      "added 1 package, removed 7 packages, and changed 1 package in 12s",
    ]);
  });

  it("an install with nothing to say says only its summary", () => {
    expect(npmInstallLines("\nup to date in 2s\n")).toEqual(["up to date in 2s"]);
  });
});

describe("runQuietly", () => {
  it("shows what runs, progress while it runs, the lines kept and the time taken", async () => {
    const written: string[] = [];
    await runQuietly(
      process.execPath,
      ["-e", "console.log('noise'); console.log('keep me'); setTimeout(() => {}, 300)"],
      {
        label: "Doing a thing",
        doing: "doing",
        keep: (output) => output.split("\n").filter((line) => line === "keep me"),
        progressEveryMs: 20,
        write: (line) => written.push(line),
      },
    );
    expect(written[0]).toBe("▸ Doing a thing");
    expect(written.some((line) => /^ {2}… still doing \(\d+ s\)$/.test(line))).toBe(true);
    expect(written).toContain("  keep me");
    expect(written).not.toContain("  noise");
    expect(written.at(-1)).toMatch(/^ {2}done in \d+ s$/);
  });

  it("on failure prints everything the step said and rejects naming the command", async () => {
    const written: string[] = [];
    await expect(
      runQuietly(process.execPath, ["-e", "console.error('the real cause'); process.exit(3)"], {
        label: "Failing",
        doing: "failing",
        keep: () => [],
        write: (line) => written.push(line),
      }),
    ).rejects.toThrow(/exited with 3$/);
    expect(written.join("\n")).toContain("the real cause");
  });

  it("progress lines count whole seconds", () => {
    expect(progressLine("building", 45_400)).toBe("  … still building (45 s)");
  });
});
