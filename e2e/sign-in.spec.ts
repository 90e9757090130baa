/**
 * Signing in and out through the browser: the console sends a signed-out visitor to sign-in and
 * back to where they were going, explains a wrong password, shows who is signed in with which
 * role, and signing out ends the session for real (the old cookie no longer works).
 */
import { expect, test } from "@playwright/test";
import { E2E_ACCOUNTS } from "./run-env";

// One address of its own for this file's attempts, apart from the fixtures' sign-ins.
test.use({ extraHTTPHeaders: { "x-forwarded-for": "10.98.0.1" } });

test("a signed-out visitor signs in, lands where they were going, and signs out", async ({
  page,
  context,
}) => {
  const account = E2E_ACCOUNTS.operator;
  await page.goto("/");
  await expect(page).toHaveURL(/\/sign-in\?next=%2F$/);
  await expect(page.getByRole("heading", { name: "Sign in", level: 1 })).toBeVisible();
  await page.screenshot({ path: test.info().outputPath("sign-in.png"), fullPage: true });

  await page.getByLabel("Email").fill(account.email);
  await page.getByLabel("Password").fill("not-the-password");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.locator(".field-error")).toHaveText(
    "That email and password do not match an active account.",
  );
  await expect(page).toHaveURL(/\/sign-in/);

  await page.getByLabel("Password").fill(account.password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page).toHaveURL(/\/$/);
  await expect(page.getByTestId("who")).toContainText(account.name);
  await expect(page.getByTestId("who-role")).toHaveText("operator");

  const cookie = (await context.cookies()).find((c) => c.name === "lp_session");
  expect(cookie?.httpOnly).toBe(true);

  await page.getByRole("button", { name: "Sign out" }).click();
  await expect(page).toHaveURL(/\/sign-in\?signedOut=1$/);
  await expect(page.getByRole("status")).toHaveText("You are signed out.");

  // The old session token is dead on the server, not merely forgotten by the browser.
  const replay = await page.request.get("/api/v1/auth/me", {
    headers: { cookie: `lp_session=${cookie?.value}` },
  });
  expect(replay.status()).toBe(401);
  await page.goto("/");
  await expect(page).toHaveURL(/\/sign-in/);
});

test("a hostile next parameter cannot send the operator to another site", async ({ page }) => {
  const account = E2E_ACCOUNTS.viewer;
  await page.goto("/sign-in?next=%2F%2Fevil.example%2F");
  await page.getByLabel("Email").fill(account.email);
  await page.getByLabel("Password").fill(account.password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page).toHaveURL(/^http:\/\/127\.0\.0\.1:\d+\/$/);
  await expect(page.getByTestId("who-role")).toHaveText("viewer");
});
