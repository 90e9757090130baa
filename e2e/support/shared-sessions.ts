/**
 * One signed-in session per role for the whole run, reused by every test and API client that asks
 * for it. The sign-in API limits attempts per account (5, then one per 30 s:
 * lib/control/auth/auth-settings.ts), and a run signs in far more often than that if every test
 * signs in afresh. Only e2e/sign-in.spec.ts signs in through the form, with sessions of its own.
 */
import {
  type APIRequestContext,
  type BrowserContext,
  expect,
  request as playwrightRequest,
} from "@playwright/test";
import { BASE_URL, E2E_ACCOUNTS, type E2ERole } from "../run-env";

type Cookies = Awaited<ReturnType<BrowserContext["cookies"]>>;

const sessions = new Map<E2ERole, Cookies>();

/** `role`'s session cookies, signing in the first time a worker asks. */
export async function sessionCookies(role: E2ERole): Promise<Cookies> {
  const known = sessions.get(role);
  if (known !== undefined) return known;
  const api = await playwrightRequest.newContext({ baseURL: BASE_URL });
  const account = E2E_ACCOUNTS[role];
  const response = await api.post("/api/v1/auth/sign-in", {
    data: { email: account.email, password: account.password },
    headers: { origin: BASE_URL, "x-forwarded-for": `10.98.0.${sessions.size + 1}` },
  });
  expect(response.status(), await response.text()).toBe(200);
  const cookies = (await api.storageState()).cookies;
  await api.dispose();
  sessions.set(role, cookies);
  return cookies;
}

/** Puts `role`'s session cookie in `context` (signing in once per run), replacing any other. */
export async function useSession(context: BrowserContext, role: E2ERole): Promise<void> {
  const cookies = await sessionCookies(role);
  await context.clearCookies();
  await context.addCookies(cookies);
}

/** An API client with `role`'s session and the Origin header a browser sends. Dispose of it. */
export async function apiAs(
  role: E2ERole,
  extraHTTPHeaders: Record<string, string> = {},
): Promise<APIRequestContext> {
  return playwrightRequest.newContext({
    baseURL: BASE_URL,
    extraHTTPHeaders: { origin: BASE_URL, ...extraHTTPHeaders },
    storageState: { cookies: await sessionCookies(role), origins: [] },
  });
}
