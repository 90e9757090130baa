/**
 * A fresh clone has no generated Prisma client (lib/generated is not committed). Every command
 * that loads it makes sure it exists first (issue 14, item 10): in a temporary copy of the
 * repository without lib/generated (its node_modules linked to this one's, as after `npm ci`),
 * `npm run db:seed` regenerates the client and seeds, `npm run token:create` then works without
 * generating again, and `npm run build`'s first step regenerates a removed client.
 */
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type Finished, runToEnd } from "./helpers/run-to-end";
import { provideTestDatabase } from "./helpers/test-database";

const ROOT = path.resolve(import.meta.dirname, "../..");
const database = provideTestDatabase();
const copy = mkdtempSync(path.join(tmpdir(), "lp-fresh-clone-"));
const CLIENT = path.join(copy, "lib/generated/prisma/client.ts");

/** Commands that load the generated client, each of which must make sure it exists. */
const NEEDS_CLIENT = [
  "build",
  "start",
  "dev",
  "db:seed",
  "admin:create",
  "token:create",
  "worker",
  "typecheck",
  "bench",
] as const;

function copyRepository(): void {
  const files = execFileSync("git", ["ls-files", "-z"], { cwd: ROOT, encoding: "utf8" })
    .split("\0")
    .filter((file) => file !== "" && existsSync(path.join(ROOT, file)));
  for (const file of files) {
    mkdirSync(path.dirname(path.join(copy, file)), { recursive: true });
    cpSync(path.join(ROOT, file), path.join(copy, file));
  }
  symlinkSync(path.join(ROOT, "node_modules"), path.join(copy, "node_modules"), "dir");
}

function npmRun(args: string[]): Promise<Finished> {
  return runToEnd("npm", ["run", "--silent", ...args], {
    cwd: copy,
    env: { ...process.env, DATABASE_URL: database.current().url, DATABASE_OWNER_URL: "" },
  });
}

afterAll(() => {
  rmSync(copy, { recursive: true, force: true });
});

describe("a fresh clone without the generated Prisma client", () => {
  it("every command that loads the client makes sure it exists first", async () => {
    const { default: pkg } = await import(path.join(ROOT, "package.json"), {
      with: { type: "json" },
    });
    const scripts = (pkg as { scripts: Record<string, string> }).scripts;
    for (const name of NEEDS_CLIENT) {
      expect(scripts[`pre${name}`], name).toBe("tsx scripts/lib/ensure-prisma-client.ts");
    }
    expect(scripts.test).toMatch(/^npm run db:generate && /);
  });

  it("npm run db:seed generates it, then seeds; the next command does not generate again", async () => {
    copyRepository();
    expect(existsSync(CLIENT)).toBe(false);
    const seeded = await npmRun(["db:seed"]);
    expect(seeded.code, seeded.output).toBe(0);
    expect(seeded.output).toContain(
      "Generating the Prisma client (lib/generated/prisma is missing: a fresh clone)",
    );
    expect(seeded.output).toContain("Seeded the example policy");
    expect(existsSync(CLIENT)).toBe(true);
    const tiers = await database.current().db.tier.count();
    expect(tiers).toBeGreaterThan(0);

    const token = await npmRun(["token:create", "--", "--name", "fresh", "--role", "viewer"]);
    expect(token.code, token.output).toBe(0);
    expect(token.output).not.toContain("Generating the Prisma client");
    expect(token.output).toMatch(/Created API token "fresh"/);
  }, 240_000);

  it("npm run build's first step regenerates a removed client", async () => {
    rmSync(path.join(copy, "lib/generated"), { recursive: true, force: true });
    // The pre step alone: the build itself (Turbopack) refuses a node_modules linked from
    // outside the copy, and the e2e tests build the real tree anyway.
    const prebuild = await npmRun(["prebuild"]);
    expect(prebuild.code, prebuild.output).toBe(0);
    expect(prebuild.output).toContain("Generating the Prisma client");
    expect(existsSync(CLIENT)).toBe(true);
  }, 120_000);
});
