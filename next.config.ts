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
  env: {
    LIMITPLANE_VERSION: pkg.version,
    LIMITPLANE_COMMIT: process.env.LIMITPLANE_COMMIT ?? gitCommit(),
    LIMITPLANE_BUILT_AT: new Date().toISOString(),
  },
};

export default nextConfig;
