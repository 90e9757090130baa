/**
 * Typed fixtures for console tests. `signIn(role)` puts that role's session in the page's browser
 * context: one real sign-in per role per run (e2e/support/shared-sessions.ts), because the
 * per-account sign-in limit would otherwise throttle the suite.
 */
import { test as base, expect } from "@playwright/test";
import type { E2ERole } from "./run-env";
import { useSession } from "./support/shared-sessions";

export const test = base.extend<{ signIn: (role: E2ERole) => Promise<void> }>({
  signIn: async ({ page }, use) => {
    await use((role) => useSession(page.context(), role));
  },
});

export { expect };
