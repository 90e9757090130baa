/**
 * Typed fixtures for console tests. `signIn(role)` signs the page's browser context in through the
 * real sign-in API (the cookie lands in the context, so the page is signed in). Each call comes
 * from an address of its own (X-Forwarded-For), so the per-address sign-in limit, which the
 * brute-force tests exercise elsewhere, does not throttle the suite.
 */
import { test as base, expect } from "@playwright/test";
import { BASE_URL, E2E_ACCOUNTS, type E2ERole } from "./run-env";

let signIns = 0;

export const test = base.extend<{ signIn: (role: E2ERole) => Promise<void> }>({
  signIn: async ({ page }, use) => {
    await use(async (role) => {
      const account = E2E_ACCOUNTS[role];
      signIns++;
      const response = await page.request.post("/api/v1/auth/sign-in", {
        data: { email: account.email, password: account.password },
        headers: {
          origin: BASE_URL,
          "x-forwarded-for": `10.99.${Math.floor(signIns / 250) % 250}.${(signIns % 250) + 1}`,
        },
      });
      expect(response.status(), await response.text()).toBe(200);
    });
  },
});

export { expect };
