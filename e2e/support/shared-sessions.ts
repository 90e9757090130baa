/**
 * One signed-in session per role for the whole run, reused by every test that asks for it. The
 * sign-in API limits attempts per account (5, then one per 30 s: lib/control/auth/auth-settings.ts),
 * and a run signs in far more often than that if every test signs in afresh.
 */
import { type BrowserContext, expect, request } from "@playwright/test";
import { BASE_URL, E2E_ACCOUNTS, type E2ERole } from "../run-env";

type Cookies = Awaited<ReturnType<BrowserContext["cookies"]>>;

const sessions = new Map<E2ERole, Cookies>();

/** Puts `role`'s session cookie in `context` (signing in once per run), replacing any other. */
export async function useSession(context: BrowserContext, role: E2ERole): Promise<void> {
  let cookies = sessions.get(role);
  if (cookies === undefined) {
    const api = await request.newContext({ baseURL: BASE_URL });
    const account = E2E_ACCOUNTS[role];
    const response = await api.post("/api/v1/auth/sign-in", {
      data: { email: account.email, password: account.password },
      headers: { origin: BASE_URL, "x-forwarded-for": `10.98.0.${sessions.size + 1}` },
    });
    expect(response.status(), await response.text()).toBe(200);
    cookies = (await api.storageState()).cookies;
    await api.dispose();
    sessions.set(role, cookies);
  }
  await context.clearCookies();
  await context.addCookies(cookies);
}
