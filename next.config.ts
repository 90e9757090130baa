import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import type { NextConfig } from "next";

function gitCommit(): string {
  try {
    return execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
  } catch {
    return "unknown";
  }
}

const pkg = JSON.parse(readFileSync(new URL("./package.json", import.meta.url), "utf8")) as {
  version: string;
};

const nextConfig: NextConfig = {
  reactStrictMode: true,
  poweredByHeader: false,
  // Server-only packages with native-ish or dynamic requires stay out of the bundle.
  serverExternalPackages: ["ioredis", "pg", "@prisma/adapter-pg"],
  experimental: {
    // With LIMITPLANE_WORKER=in-process (`npm run up` on the embedded database) the worker's jobs
    // share the console's event loop. Preloading every route at start loads them all in one
    // synchronous stretch of seconds (longer on a busy machine), long enough for a Redis command
    // a job has in flight to pass its 5 s timeout although Redis answered. Each route then loads
    // on its first request instead, a far shorter stall. Read when the server starts.
    preloadEntriesOnStart: process.env.LIMITPLANE_WORKER !== "in-process",
  },
  env: {
    LIMITPLANE_VERSION: pkg.version,
    LIMITPLANE_COMMIT: process.env.LIMITPLANE_COMMIT ?? gitCommit(),
    LIMITPLANE_BUILT_AT: new Date().toISOString(),
  },
};

export default nextConfig;
