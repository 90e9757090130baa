/**
 * The editors that add and remove policy entities, and the guardrails', as an admin in the
 * browser: each with a preview that must be seen, a required reason, and an audit entry. Deleting
 * is refused while anything refers to the entity, and the preview names what does.
 */
import { randomBytes } from "node:crypto";
import { expect, test } from "./fixtures";
import { BASE_URL } from "./run-env";

const suffix = randomBytes(3).toString("hex");

async function auditActions(
  request: import("@playwright/test").APIRequestContext,
  entityType: string,
  entityId: string,
) {
  const response = await request.get(
    `/api/v1/audit?entityType=${entityType}&entityId=${encodeURIComponent(entityId)}`,
  );
  expect(response.status(), await response.text()).toBe(200);
  return ((await response.json()) as { entries: { action: string; reason: string }[] }).entries;
}

test("an admin creates a tier with a preview and a reason, then deletes it", async ({
  page,
  signIn,
}) => {
  await signIn("admin");
  const name = `gold-${suffix}`;
  await page.goto("/policies");
  await page.getByRole("link", { name: "New tier" }).click();
  await expect(page.getByRole("heading", { name: "New tier", level: 1 })).toBeVisible();

  // A bad name and no reason are refused at their fields before anything is sent.
  await page.getByLabel("Name", { exact: true }).fill("Gold Tier");
  await page.getByRole("button", { name: "Preview change" }).click();
  await expect(page.getByTestId("form-error")).toBeVisible();
  await expect(page.getByTestId("edit-reason-error")).toContainText("Say why");

  await page.getByLabel("Name", { exact: true }).fill(name);
  await page.getByLabel("Burst (capacity)").fill("400");
  await page.getByLabel("Sustained rate (per second)").fill("40");
  await page.getByLabel("Reason (required)").fill("e2e: a gold plan for the new contract");
  await page.getByRole("button", { name: "Preview change" }).click();
  const change = page.getByTestId("change-preview").getByTestId(`preview-tier:${name}`);
  await expect(change.getByTestId("preview-before")).toContainText("no limit of its own");
  await expect(change.getByTestId("preview-after")).toContainText("40/s, bursts of 400");
  await page.getByRole("button", { name: "Create tier" }).click();
  await page.waitForURL(`**/policies/tiers/${name}`);
  await expect(page.getByTestId("current-limit")).toContainText("40/s, bursts of 400");
  expect((await auditActions(page.request, "tier", name)).map((e) => e.action)).toEqual([
    "tier.create",
  ]);

  // Nothing refers to it: the preview says what goes, and the deletion needs its own reason.
  await page.getByRole("button", { name: "Preview deletion" }).click();
  await expect(page.getByTestId("delete-reason-error")).toContainText("Say why");
  await page.getByLabel("Reason for deleting (required)").fill("e2e: the contract fell through");
  await page.getByRole("button", { name: "Preview deletion" }).click();
  await expect(page.getByTestId("preview-referrers")).toHaveCount(0);
  await expect(page.getByTestId(`preview-tier:${name}`).getByTestId("preview-after")).toHaveText(
    "removed",
  );
  await page.getByRole("button", { name: `Delete ${name}` }).click();
  await page.waitForURL(`${BASE_URL}/policies`);
  await expect(page.getByTestId(`tier-row-${name}`)).toHaveCount(0);
  const entries = await auditActions(page.request, "tier", name);
  expect(entries.map((e) => e.action)).toEqual(["tier.delete", "tier.create"]);
  expect(entries[0]?.reason).toBe("e2e: the contract fell through");
});

test("deleting a tier that customers and classes use is refused, and the preview names them", async ({
  page,
  signIn,
}) => {
  await signIn("admin");
  await page.goto("/policies/tiers/free");
  await page.getByLabel("Reason for deleting (required)").fill("e2e: try to remove free");
  await page.getByRole("button", { name: "Preview deletion" }).click();
  const referrers = page.getByTestId("preview-referrers");
  await expect(referrers).toContainText('tier "free" cannot be deleted while these refer to it');
  await expect(referrers).toContainText("the settings (defaultTier)");
  await expect(referrers).toContainText('"initech"');
  await expect(page.getByRole("button", { name: "Delete free" })).toBeDisabled();
});

test("an admin creates an endpoint class and deletes it; a class in use names its referrers", async ({
  page,
  signIn,
}) => {
  await signIn("admin");
  const name = `exports-${suffix}`;
  await page.goto("/policies");
  await page.getByRole("link", { name: "New endpoint class" }).click();
  await page.getByLabel("Name", { exact: true }).fill(name);
  await page.getByLabel("Method").selectOption("POST");
  await page.getByLabel("Path pattern (optional)").fill(`/v1/${name}/*`);
  await page.getByLabel("Cost per request").fill("5");
  await page.getByLabel("Reason (required)").fill("e2e: exports are expensive");
  await page.getByRole("button", { name: "Preview change" }).click();
  await expect(page.getByTestId("change-preview")).toContainText(`POST /v1/${name}/*`);
  await expect(page.getByTestId("change-preview")).toContainText("5 per request");
  await page.getByRole("button", { name: "Create endpoint class" }).click();
  await page.waitForURL(`**/policies/endpoint-classes/${name}`);
  await expect(page.getByRole("heading", { level: 1 })).toContainText(name);

  await page.getByLabel("Reason for deleting (required)").fill("e2e: done with exports");
  await page.getByRole("button", { name: "Preview deletion" }).click();
  await expect(page.getByTestId("preview-referrers")).toHaveCount(0);
  await page.getByRole("button", { name: `Delete ${name}` }).click();
  await page.waitForURL(`${BASE_URL}/policies`);
  expect((await auditActions(page.request, "endpoint-class", name)).map((e) => e.action)).toEqual([
    "endpoint-class.delete",
    "endpoint-class.create",
  ]);

  // `reports` carries globex's override: refused, named.
  await page.goto("/policies/endpoint-classes/reports");
  await page.getByLabel("Reason for deleting (required)").fill("e2e: try to remove reports");
  await page.getByRole("button", { name: "Preview deletion" }).click();
  await expect(page.getByTestId("preview-referrers")).toContainText(
    "customer:globex/endpoint:reports",
  );
  await expect(page.getByRole("button", { name: "Delete reports" })).toBeDisabled();
});

test("an admin edits the guardrails with a preview and a reason", async ({ page, signIn }) => {
  await signIn("admin");
  await page.goto("/policies/settings");
  await page.getByLabel("Largest incident factor").fill("8");
  await page.getByLabel("Reason for the guardrails change (required)").fill("e2e: tighter raises");
  await page.getByRole("button", { name: "Preview guardrails" }).click();
  const preview = page.getByTestId("change-preview");
  await expect(preview).toContainText("maxIncidentFactor: ×10 → ×8");
  await page.getByRole("button", { name: "Save guardrails" }).click();
  await expect(page.getByTestId("saved")).toBeVisible();
  await expect(page.getByText("factors up to ×8")).toBeVisible();
  const entries = await auditActions(page.request, "settings", "settings");
  expect(entries[0]).toMatchObject({ action: "settings.update", reason: "e2e: tighter raises" });

  // Back as it was, for the specs that follow (the incident raise reads ×10).
  await page.reload();
  await page.getByLabel("Largest incident factor").fill("10");
  await page.getByLabel("Reason for the guardrails change (required)").fill("e2e: restore");
  await page.getByRole("button", { name: "Preview guardrails" }).click();
  await page.getByRole("button", { name: "Save guardrails" }).click();
  await expect(page.getByText("factors up to ×10")).toBeVisible();
});
