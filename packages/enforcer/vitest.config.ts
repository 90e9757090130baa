import { defineConfig } from "vitest/config";

/**
 * The package's own tests, `npm test -w packages/enforcer`:
 * - unit: pure code beside its source (`src/**\/*.test.ts`), no services;
 * - redis: the Redis store against the real Redis (`test/`), each run under its own key prefix.
 */
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "enforcer-unit",
          root: import.meta.dirname,
          include: ["src/**/*.test.ts"],
          setupFiles: ["src/testing/fast-check-setup.ts"],
          environment: "node",
        },
      },
      {
        test: {
          name: "enforcer-redis",
          root: import.meta.dirname,
          include: ["test/**/*.test.ts"],
          globalSetup: ["test/global-setup.ts"],
          setupFiles: ["src/testing/fast-check-setup.ts", "test/setup-env.ts"],
          environment: "node",
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
