/**
 * End-to-end tests: the Playwright runner drives Debian's Chromium against the production build
 * (`next build` runs first, in `npm run test:e2e`), started here on ports of its own.
 *
 * Two servers share one fresh database and one Redis key prefix for the run:
 * - `healthy` on E2E_PORT (default 3100) with the real Redis;
 * - `no-redis` on E2E_PORT+1 pointed at a port where no Redis listens, for the failure views.
 * The run's ids and ports live in e2e/run-env.ts.
 */
import { defineConfig, devices } from "@playwright/test";
import {
  BASE_URL,
  DEAD_REDIS_URL,
  E2E_APP_DATABASE_URL,
  E2E_AUDIT_KEY,
  E2E_DATABASE_URL,
  E2E_PORT,
  E2E_REDIS_PREFIX,
  E2E_REDIS_URL,
  E2E_SESSION_SECRET,
  NO_REDIS_BASE_URL,
  NO_REDIS_PORT,
} from "./e2e/run-env";

/** The console as `npm start` runs it (scripts/console.ts), without npm in between. */
const CONSOLE = "node --conditions=react-server --import tsx scripts/console.ts";

const serverEnv = {
  DATABASE_URL: E2E_APP_DATABASE_URL,
  DATABASE_OWNER_URL: E2E_DATABASE_URL,
  REDIS_KEY_PREFIX: E2E_REDIS_PREFIX,
  SESSION_SECRET: E2E_SESSION_SECRET,
  AUDIT_KEY: E2E_AUDIT_KEY,
  DATABASE_POOL_SIZE: "4",
  // The specs stand for clients behind one proxy: each sends an X-Forwarded-For of its own, so
  // the per-address sign-in limit of one spec touches no other. e2e/console-server.spec.ts runs
  // consoles of its own to test the default (no proxy trusted).
  CONSOLE_TRUST_PROXY: "1",
};

export default defineConfig({
  testDir: "e2e",
  outputDir: "test-results/e2e",
  fullyParallel: false,
  workers: 1,
  retries: 0,
  timeout: 30_000,
  expect: { timeout: 10_000 },
  reporter: [["list"], ["html", { outputFolder: "test-results/e2e-report", open: "never" }]],
  globalSetup: "./e2e/global-setup.ts",
  globalTeardown: "./e2e/global-teardown.ts",
  use: {
    baseURL: BASE_URL,
    trace: "retain-on-failure",
    screenshot: "only-on-failure",
  },
  projects: [
    {
      name: "ui",
      use: {
        ...devices["Desktop Chrome"],
        launchOptions: {
          executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
          args: [
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
          ],
        },
      },
    },
  ],
  webServer: [
    {
      name: "healthy",
      command: `npx tsx --conditions=react-server scripts/db/migrate.ts deploy && ${CONSOLE}`,
      url: `${BASE_URL}/api/health`,
      env: { ...serverEnv, PORT: String(E2E_PORT), REDIS_URL: E2E_REDIS_URL },
      timeout: 120_000,
      reuseExistingServer: false,
      stdout: "ignore",
      stderr: "pipe",
    },
    {
      name: "no-redis",
      command: CONSOLE,
      // /api/health answers 503 without Redis; any answer means the server is up.
      url: `${NO_REDIS_BASE_URL}/status`,
      env: { ...serverEnv, PORT: String(NO_REDIS_PORT), REDIS_URL: DEAD_REDIS_URL },
      timeout: 120_000,
      reuseExistingServer: false,
      stdout: "ignore",
      stderr: "pipe",
    },
  ],
});
