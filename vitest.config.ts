import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const root = fileURLToPath(new URL(".", import.meta.url));

/**
 * Three projects, one command:
 * - unit: pure code beside its source (`*.test.ts`), no services; and `test/lint/**`, which
 *   checks the repository itself (layer rules, documentation).
 * - integration: `test/integration/**` against the real Postgres and Redis. The global setup gives
 *   every run its own database and Redis key prefix, so concurrent runs cannot collide.
 * - busy: `test/busy/**`, the acceptance tests on a deliberately busy machine (processes spinning
 *   on every core). One file at a time, and run last (`npm run test:busy`, after the others in
 *   `npm test`), so the spinning cores slow no other test.
 */
export default defineConfig({
  resolve: {
    // The enforcer package by its name, from its source: tsconfig.json's `paths` (its
    // package.json exports the build, which only installs outside the workspace use).
    tsconfigPaths: true,
    alias: {
      "@": root,
      // Tests run the server modules directly, as Next's server does: `server-only` is empty there.
      "server-only": `${root}node_modules/server-only/empty.js`,
    },
  },
  test: {
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          setupFiles: ["test/fast-check-setup.ts"],
          include: [
            "lib/**/*.test.ts",
            "components/**/*.test.{ts,tsx}",
            "app/**/*.test.{ts,tsx}",
            "scripts/**/*.test.ts",
            "bench/**/*.test.ts",
            "test/lint/**/*.test.ts",
          ],
          environment: "node",
        },
      },
      {
        extends: true,
        test: {
          name: "integration",
          include: ["test/integration/**/*.test.ts"],
          environment: "node",
          globalSetup: ["test/integration/global-setup.ts"],
          setupFiles: ["test/fast-check-setup.ts", "test/integration/setup-env.ts"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        extends: true,
        test: {
          name: "busy",
          include: ["test/busy/**/*.test.ts"],
          environment: "node",
          globalSetup: ["test/integration/global-setup.ts"],
          setupFiles: ["test/fast-check-setup.ts", "test/integration/setup-env.ts"],
          fileParallelism: false,
          testTimeout: 180_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
