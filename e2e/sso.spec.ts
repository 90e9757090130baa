/**
 * Single sign-on in Chromium against a real OpenID Connect provider (`oidc-provider` over https,
 * test/support/oidc-provider.ts) and a console of its own configured for it with password
 * sign-in off: an operator signs in through the provider and lands where they were going with
 * the role their group grants, and signing out of the console signs them out at the provider
 * too; a password is refused but for the break-glass admin.
 */
import { test as base, expect } from "@playwright/test";
import pg from "pg";
import { startTestOidcProvider, type TestOidcProvider } from "../test/support/oidc-provider";
import { E2E_ACCOUNTS, E2E_DATABASE_URL, E2E_PORT } from "./run-env";
import { type OwnConsole, startOwnConsole } from "./support/own-console";

const CONSOLE_PORT = E2E_PORT + 38;
const CONSOLE_URL = `http://127.0.0.1:${CONSOLE_PORT}`;

const test = base.extend({});
test.describe.configure({ mode: "serial" });

let provider: TestOidcProvider;
let own: OwnConsole;

test.beforeAll(async () => {
  provider = await startTestOidcProvider({
    redirectUris: [`${CONSOLE_URL}/auth/oidc/callback`],
    postLogoutRedirectUris: [`${CONSOLE_URL}/sign-in?signedOut=1`],
  });
  own = await startOwnConsole(CONSOLE_PORT, {
    OIDC_ISSUER: provider.issuer,
    OIDC_CLIENT_ID: provider.clientId,
    OIDC_CLIENT_SECRET: provider.clientSecret,
    OIDC_ROLE_MAP: "lp-admins=admin,lp-sre=operator,staff=viewer",
    OIDC_CA_FILE: provider.caFile,
    OIDC_DISPLAY_NAME: "Corp IdP",
    PASSWORD_SIGN_IN: "off",
    BREAK_GLASS_ADMINS: E2E_ACCOUNTS.admin.email,
  });
});

test.afterAll(async () => {
  await own?.stop();
  await provider?.stop();
});

async function operatorRow(email: string) {
  const client = new pg.Client({ connectionString: E2E_DATABASE_URL });
  await client.connect();
  try {
    const { rows } = await client.query<{ role: string; ssoIssuer: string | null }>(
      `SELECT role::text AS role, "ssoIssuer" FROM "Operator" WHERE email = $1`,
      [email],
    );
    return rows[0] ?? null;
  } finally {
    await client.end();
  }
}

test("an operator signs in through the identity provider with the role of their group", async ({
  browser,
}) => {
  const login = `sre-${Date.now().toString(36)}`;
  const email = `${login}@corp.test`;
  provider.accounts.set(login, {
    email,
    email_verified: true,
    name: "Sam Reliability",
    groups: ["staff", "lp-sre"],
  });
  // The provider's certificate is this test's own; the console trusts it through OIDC_CA_FILE.
  const context = await browser.newContext({ ignoreHTTPSErrors: true });
  const page = await context.newPage();
  await page.goto(`${CONSOLE_URL}/sign-in?next=/customers`);
  // Password sign-in is off: the form is tucked away as break-glass.
  await expect(page.getByText("Break-glass admin sign-in")).toBeVisible();
  await expect(page.getByLabel("Email")).toBeHidden();

  await page.getByRole("link", { name: "Sign in with Corp IdP" }).click();
  await expect(page).toHaveURL(new RegExp(`^${provider.issuer}/interaction/`));
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill("anything");
  await page.getByRole("button", { name: "Sign-in" }).click();

  await expect(page).toHaveURL(`${CONSOLE_URL}/customers`);
  await expect(page.getByTestId("who")).toContainText("Sam Reliability");
  await expect(page.getByTestId("who-role")).toHaveText("operator");
  expect(await operatorRow(email)).toEqual({ role: "operator", ssoIssuer: provider.issuer });
  await context.close();
});

test("signing out of the console signs out at the provider too, and comes back", async ({
  browser,
}) => {
  const login = `leaver-${Date.now().toString(36)}`;
  provider.accounts.set(login, {
    email: `${login}@corp.test`,
    email_verified: true,
    name: "Lee Leaving",
    groups: ["staff"],
  });
  const context = await browser.newContext({ ignoreHTTPSErrors: true });
  const page = await context.newPage();
  await page.goto(`${CONSOLE_URL}/sign-in?next=/customers`);
  await page.getByRole("link", { name: "Sign in with Corp IdP" }).click();
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill("anything");
  await page.getByRole("button", { name: "Sign-in" }).click();
  await expect(page.getByTestId("who")).toContainText("Lee Leaving");

  await page.getByRole("button", { name: "Sign out" }).click();
  // The provider's own page (its end-session endpoint, reached with the ID token as a hint).
  await expect(page).toHaveURL(new RegExp(`^${provider.issuer}/session/end`));
  await page.getByRole("button", { name: "Yes, sign me out" }).click();
  await expect(page).toHaveURL(`${CONSOLE_URL}/sign-in?signedOut=1`);
  await expect(page.getByText("You are signed out.")).toBeVisible();

  // Signed out here: a page sends the browser to sign in again.
  await page.goto(`${CONSOLE_URL}/customers`);
  await expect(page).toHaveURL(/\/sign-in/);
  // And there: the provider asks for the login again instead of signing straight back in.
  await page.getByRole("link", { name: "Sign in with Corp IdP" }).click();
  await expect(page).toHaveURL(new RegExp(`^${provider.issuer}/interaction/`));
  await expect(page.locator('input[name="login"]')).toBeVisible();
  await context.close();
});

test("with password sign-in off, a password is refused but for the break-glass admin", async ({
  playwright,
}) => {
  const client = await playwright.request.newContext({ baseURL: CONSOLE_URL });
  const viewer = await client.post("/api/v1/auth/sign-in", {
    data: { email: E2E_ACCOUNTS.viewer.email, password: E2E_ACCOUNTS.viewer.password },
    headers: { "x-forwarded-for": "10.38.0.1" },
  });
  expect(viewer.status()).toBe(403);
  expect((await viewer.json()).error.message).toContain("Password sign-in is turned off");
  const admin = await client.post("/api/v1/auth/sign-in", {
    data: { email: E2E_ACCOUNTS.admin.email, password: E2E_ACCOUNTS.admin.password },
    headers: { "x-forwarded-for": "10.38.0.2" },
  });
  expect(admin.status()).toBe(200);
  expect(own.output()).toContain(`BREAK-GLASS: ${E2E_ACCOUNTS.admin.email} signed in`);
  await client.dispose();
});
