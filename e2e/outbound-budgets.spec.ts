/**
 * An operator creates an outbound budget in the console (a bad field is refused beside it first),
 * sees its charts fill once a worker using it reports, edits its rate, and deletes it after
 * confirming; each step is read back through the API, which reads the database. A viewer sees the
 * budget and is offered no form. Then an operator raises a budget for a while (a raise beyond the
 * guardrails is refused beside its field first), sees the banner, the list and the overrides page
 * say so, and reverts it.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import path from "node:path";
import { createInterface } from "node:readline";
import { expect, test } from "./fixtures";
import { E2E_REDIS_PREFIX, E2E_REDIS_URL } from "./run-env";
import { seriousViolations } from "./support/axe";

const HOLDER_PATH = path.resolve(
  import.meta.dirname,
  "../test/integration/helpers/outbound-holder.ts",
);

/**
 * A worker process using the budget: it makes `calls` calls counted in the minute two minutes
 * ago (complete, so the run's worker rolls it up on its next pass), reports them, and is stopped.
 */
async function reportCalls(budget: object, calls: number): Promise<void> {
  const wallMs = (Math.floor(Date.now() / 60_000) - 2) * 60_000 + 10_000;
  const child: ChildProcess = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      HOLDER_PATH,
      E2E_REDIS_URL,
      E2E_REDIS_PREFIX,
      JSON.stringify(budget),
      String(calls),
      String(wallMs),
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  try {
    const lines = createInterface({ input: child.stdout ?? process.stdin });
    for await (const line of lines) if (line === "holding") return;
    throw new Error("the worker stopped before reporting its calls");
  } finally {
    child.kill("SIGKILL");
    if (child.exitCode === null) await once(child, "exit");
  }
}

test("an operator creates, edits and deletes an outbound budget; a viewer only reads it", async ({
  page,
  signIn,
}) => {
  // The run's worker rolls a minute up on its next pass, every 15 s.
  test.setTimeout(240_000);
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
  await expect(page.getByTestId("outbound-activity")).toContainText(
    "No calls recorded yet: the panel fills once a worker using this budget reports",
  );

  // A worker using the budget reports 3 calls; the run's worker rolls their minute up.
  await reportCalls(
    {
      name,
      limit: { algorithm: "token-bucket", capacity: 3, refillPerSec: 10 },
      concurrency: { max: 3, slotTtlMs: 1_000 },
    },
    3,
  );
  await expect(async () => {
    await page.reload();
    await expect(page.getByTestId("outbound-charts")).toBeVisible({ timeout: 1_000 });
  }).toPass({ timeout: 150_000 });
  const charts = page.getByTestId("outbound-charts");
  await expect(charts.getByRole("figure", { name: "Calls per minute" })).toContainText(
    "3 calls granted in the last 1 h",
  );
  await expect(charts.getByRole("figure", { name: "Peak slots in flight" })).toContainText(
    "At most 3 slots held at once on one key",
  );
  await expect(charts.getByRole("figure", { name: "Slots freed by TTL" })).toBeVisible();
  expect(await seriousViolations(page), "axe on the budget's charts").toEqual([]);
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

test("an operator raises an outbound budget for a while, then reverts it", async ({
  page,
  signIn,
}) => {
  const name = `e2e-quota-${Date.now().toString(36)}`;
  await signIn("operator");
  await page.goto("/outbound-budgets");
  const create = page.getByRole("form", { name: "New outbound budget" });
  await create.getByLabel("Name (the scope is outbound:<name>)").fill(name);
  await create.getByLabel("Calls in flight at most (empty: no cap)").fill("4");
  await create.getByLabel("Reason (required)").fill("the provider's documented quota");
  await create.getByRole("button", { name: "Create budget" }).click();
  await expect(page).toHaveURL(new RegExp(`/outbound-budgets/${name}$`));

  const raise = page.getByRole("form", { name: "Raise for a while" });
  await raise.getByLabel("Sustained rate (per second)").fill("30");
  await raise.getByLabel("Burst (capacity)").fill("3");
  await raise
    .getByLabel("Calls in flight at most while raised (empty: keep the budget's own)")
    .fill("100");
  await raise.getByLabel("For how long").fill("2");
  await raise.getByLabel("Reason (required)").fill("the provider raised our quota for the day");
  await raise.getByRole("button", { name: "Raise for a while" }).click();
  await expect(page.getByTestId("raise-concurrency-max-error")).toContainText(
    "the maximum raise is 10x (guardrails.maxIncidentFactor)",
  );
  expect(
    (await (await page.request.get(`/api/v1/outbound-budgets/${name}`)).json()).budget.raise,
  ).toBeNull();

  await raise
    .getByLabel("Calls in flight at most while raised (empty: keep the budget's own)")
    .fill("8");
  const preview = page.getByTestId("raise-preview");
  await expect(preview).toContainText("Limit: 10/s, bursts of 1 → 30/s, bursts of 3");
  await expect(preview).toContainText("In flight: at most 4 → at most 8");
  await expect(preview).toContainText(/Until (\d{4}-\d{2}-\d{2} )?\d{2}:\d{2} UTC/);
  await raise.getByRole("button", { name: "Raise for a while" }).click();

  const banner = page.getByTestId("raise-banner");
  await expect(banner).toContainText(
    /Raised until (\d{4}-\d{2}-\d{2} )?\d{2}:\d{2} UTC by .+: the provider raised our quota for the day/,
  );
  await expect(banner).toContainText("In flight: at most 4 → at most 8");
  const raised = (await (await page.request.get(`/api/v1/outbound-budgets/${name}`)).json()).budget;
  expect(raised.raise).toMatchObject({
    limit: { algorithm: "token-bucket", capacity: 3, refillPerSec: 30 },
    concurrencyMax: 8,
    reason: "the provider raised our quota for the day",
  });
  expect(Date.parse(raised.raise.expiresAt) - Date.parse(raised.raise.startsAt)).toBe(7_200_000);
  const audit = await page.request.get(
    `/api/v1/audit?entityType=outbound-budget&entityId=${name}&action=outbound-budget.raise`,
  );
  expect((await audit.json()).entries).toHaveLength(1);

  await page.goto("/outbound-budgets");
  await expect(page.getByTestId(`budget-${name}`)).toContainText(/raised until/);
  await page.goto("/overrides");
  await expect(
    page.getByTestId("raised-outbound-budget").filter({ hasText: `outbound:${name}` }),
  ).toContainText("the provider raised our quota for the day");

  await page.goto(`/outbound-budgets/${name}`);
  await page.getByRole("button", { name: "Revert now" }).click();
  await page.getByLabel("Reason for reverting (required)").fill("the provider's day is over");
  await page.getByRole("button", { name: "Revert the raise" }).click();
  await expect(page.getByTestId("raise-banner")).toHaveCount(0);
  await expect(page.getByRole("form", { name: "Raise for a while" })).toBeVisible();
  expect(
    (await (await page.request.get(`/api/v1/outbound-budgets/${name}`)).json()).budget.raise,
  ).toBeNull();
  const reverts = await page.request.get(
    `/api/v1/audit?entityType=outbound-budget&entityId=${name}&action=outbound-budget.revert-raise`,
  );
  expect((await reverts.json()).entries).toHaveLength(1);
});
