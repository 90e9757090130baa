/**
 * An operator creates an outbound budget in the console (a bad field is refused beside it first),
 * edits its rate, and deletes it after confirming; each step is read back through the API, which
 * reads the database. A viewer sees the budget and is offered no form.
 */
import { expect, test } from "./fixtures";

test("an operator creates, edits and deletes an outbound budget; a viewer only reads it", async ({
  page,
  signIn,
}) => {
  const name = `e2e-mail-${Date.now().toString(36)}`;
  await signIn("operator");
  await page.goto("/outbound-budgets");
  await expect(page.getByRole("heading", { name: "Outbound budgets", level: 1 })).toBeVisible();

  const create = page.getByRole("form", { name: "New outbound budget" });
  await create.getByLabel("Name (the scope is outbound:<name>)").fill("Bad Name!");
  await create.getByLabel("Reason (required)").fill("the provider's documented quota");
  await create.getByRole("button", { name: "Create budget" }).click();
  await expect(page.getByTestId("budget-name-error")).toContainText("outbound budget name must be");

  await create.getByLabel("Name (the scope is outbound:<name>)").fill(name);
  await create.getByLabel("Key").selectOption("account");
  await create.getByRole("button", { name: "Create budget" }).click();
  await expect(page).toHaveURL(new RegExp(`/outbound-budgets/${name}$`));
  await expect(page.getByRole("heading", { level: 1 })).toContainText(`outbound:${name}`);
  await expect(page.getByTestId("budget-summary")).toContainText("burst 1, 10/s (token bucket)");
  const created = await page.request.get(`/api/v1/outbound-budgets/${name}`);
  expect(created.status()).toBe(200);
  expect((await created.json()).budget).toMatchObject({
    name,
    limit: { algorithm: "token-bucket", capacity: 1, refillPerSec: 10 },
    keyBy: "account",
    version: 1,
  });

  const edit = page.getByRole("form", { name: "Edit outbound budget" });
  await edit.getByLabel("Longest wait (ms)").fill("-5");
  await edit.getByLabel("Reason (required)").fill("the provider raised our quota for the day");
  await edit.getByRole("button", { name: "Save budget" }).click();
  await expect(page.getByTestId("budget-max-wait-error")).toContainText("at least 0");
  await edit.getByLabel("Longest wait (ms)").fill("5000");
  await edit.getByLabel("Sustained rate (per second)").fill("50");
  await edit.getByRole("button", { name: "Save budget" }).click();
  await expect(page.getByTestId("budget-summary")).toContainText("burst 1, 50/s (token bucket)");
  await expect
    .poll(
      async () =>
        (await (await page.request.get(`/api/v1/outbound-budgets/${name}`)).json()).budget,
    )
    .toMatchObject({ limit: { refillPerSec: 50 }, maxWaitMs: 5_000, version: 2 });

  await signIn("viewer");
  await page.goto(`/outbound-budgets/${name}`);
  await expect(page.getByTestId("budget-summary")).toContainText("50/s");
  await expect(page.getByRole("form", { name: "Edit outbound budget" })).toHaveCount(0);
  await expect(
    page.getByRole("main").getByRole("button", { name: /^\s*(create|save|delete)\b/i }),
  ).toHaveCount(0);
  await page.goto("/outbound-budgets");
  await expect(page.getByTestId(`budget-${name}`)).toContainText(`outbound:${name}`);
  await expect(page.getByRole("form", { name: "New outbound budget" })).toHaveCount(0);

  await signIn("operator");
  await page.goto(`/outbound-budgets/${name}`);
  await page.getByRole("button", { name: "Delete budget…" }).click();
  await page.getByLabel("Reason for deleting (required)").fill("provider dropped");
  await page.getByRole("button", { name: `Delete ${name}` }).click();
  await expect(page).toHaveURL(/\/outbound-budgets$/);
  await expect(page.getByTestId(`budget-${name}`)).toHaveCount(0);
  expect((await page.request.get(`/api/v1/outbound-budgets/${name}`)).status()).toBe(404);
});
