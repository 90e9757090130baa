/**
 * Every command that loads the generated Prisma client (`lib/generated/prisma`, not committed)
 * first makes sure it exists and is not older than prisma/schema.prisma: `npm run build`,
 * `start`, `dev`, `db:seed`, `admin:create`, `token:create`, `worker`, `typecheck` and `bench`
 * run this file before themselves (their `pre` scripts in package.json), and `npm run up` calls
 * `ensurePrismaClient`. On a fresh clone the first of them generates it. Generating only when
 * needed matters: it rewrites files under lib/, which would make a fresh build look stale.
 */
import { spawn } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import path from "node:path";

const ROOT = path.resolve(import.meta.dirname, "../..");
const CLIENT = path.join(ROOT, "lib/generated/prisma/client.ts");
const SCHEMA = path.join(ROOT, "prisma/schema.prisma");

/** Whether the generated client is missing or older than the schema. */
export function isPrismaClientStale(): boolean {
  if (!existsSync(CLIENT)) return true;
  return statSync(SCHEMA).mtimeMs > statSync(CLIENT).mtimeMs;
}

/** Generates the client when stale (see `isPrismaClientStale`); true when it did. */
export async function ensurePrismaClient(
  options: { log?: (line: string) => void } = {},
): Promise<boolean> {
  if (!isPrismaClientStale()) return false;
  (options.log ?? console.log)(
    existsSync(CLIENT)
      ? "Generating the Prisma client (prisma/schema.prisma changed)"
      : "Generating the Prisma client (lib/generated/prisma is missing: a fresh clone)",
  );
  await new Promise<void>((resolve, reject) => {
    const child = spawn(path.join(ROOT, "node_modules/.bin/prisma"), ["generate"], {
      cwd: ROOT,
      // Prisma's CLI wants a schema engine binary it never runs for `generate` (no download).
      env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: path.join(ROOT, "package.json") },
      stdio: ["ignore", "ignore", "inherit"],
    });
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`prisma generate exited with ${code}`)),
    );
  });
  return true;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  ensurePrismaClient().catch((error: unknown) => {
    console.error(`prisma client: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
