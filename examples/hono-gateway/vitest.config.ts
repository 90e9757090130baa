import { defineConfig } from "vitest/config";

export default defineConfig({
  // The enforcer from its source in this workspace (tsconfig.json `paths`); the packed-tarball
  // test runs the example against the package's build instead.
  resolve: { tsconfigPaths: true },
  test: { root: import.meta.dirname, include: ["src/**/*.test.ts"], testTimeout: 30_000 },
});
