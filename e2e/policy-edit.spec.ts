/**
 * Editing policy: an admin changes a tier's limit through the form, sees the preview (old and new
 * in words, the customers on the tier and whose override still wins), saves with a reason, sees
 * the new policy version, and the audit API shows the entry. A stale version is refused with a
 * reload offered; client and API field errors land at the field (a limit's durability too);
 * others see it read-only.
 */
import { randomBytes } from "node:crypto";
import type { APIRequestContext, Page, TestInfo } from "@playwright/test";
import { expect, test } from "./fixtures";
import { BASE_URL } from "./run-env";
import { useSession } from "./support/shared-sessions";

const origin = { origin: BASE_URL };

async function shoot(page: Page, testInfo: TestInfo, name: string): Promise<void> {
  await page.screenshot({ path: testInfo.outputPath(`${name}.png`), fullPage: true });
}

/**
 * Errors the browser logged (hydration mismatches, script errors): a page that works says none.
 * Failed loads are left out: the refusals these tests provoke (400, 409) and the absent favicon.
 */
const consoleErrors: string[] = [];
test.beforeEach(({ page }) => {
  consoleErrors.length = 0;
  page.on("console", (message) => {
    if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) {
      consoleErrors.push(message.text());
    }
  });
});
test.afterEach(() => {
  expect(consoleErrors).toEqual([]);
});

/**
 * A tier of the test's own with `customers` registered on it, the first of them with a standing
 * account override: nothing another spec does (or counts on) meets it.
 */
async function tierWithCustomers(request: APIRequestContext, customers: number) {
  const tier = `e2e-pol-${randomBytes(3).toString("hex")}`;
  const created = await request.post("/api/v1/tiers", {
    headers: origin,
    data: {
      name: tier,
      displayName: `Policy ${tier}`,
      limit: { algorithm: "token-bucket", capacity: 200, refillPerSec: 100 },
      reason: "e2e: a tier for the policy edit test",
    },
  });
  expect(created.status(), await created.text()).toBe(201);
  const ids = Array.from({ length: customers }, (_, index) => `${tier}-c${index + 1}`);
  for (const id of ids) {
    const customer = await request.post("/api/v1/customers", {
      headers: origin,
      data: { id, displayName: `Customer ${id}`, tier, reason: "e2e: a customer on the tier" },
    });
    expect(customer.status(), await customer.text()).toBe(201);
  }
  const [first] = ids;
  const override = await request.post(`/api/v1/customers/${first}/overrides`, {
    headers: origin,
    data: {
      endpointClass: null,
      limit: { algorithm: "token-bucket", capacity: 400, refillPerSec: 150 },
      reason: "e2e: the first customer's contract",
    },
  });
  expect(override.status(), await override.text()).toBe(201);
  return { tier, customers: ids };
}

test.describe("policy edit", () => {
  test("an admin edits a tier limit with a preview, saves with a reason, and the audit shows it", async ({
    page,
  }, testInfo) => {
    await useSession(page.context(), "admin");
    // Two customers on the tier, the first with a standing account override: the preview must
    // say the change reaches both, and that the first keeps its own limit.
    const { tier, customers } = await tierWithCustomers(page.request, 2);

    await page.goto("/policies");
    await expect(page.getByRole("heading", { name: "Policies", level: 1 })).toBeVisible();
    await expect(page.getByTestId(`tier-row-${tier}`)).toContainText("100/s, bursts of 200");
    await expect(page.getByTestId("policy-version")).toBeVisible();
    await shoot(page, testInfo, "policies");

    await page.getByRole("link", { name: `Edit tier ${tier}` }).click();
    await expect(page.getByRole("heading", { level: 1 })).toContainText(`Tier Policy ${tier}`);
    await expect(page.getByTestId("current-limit")).toContainText("100/s, bursts of 200");

    // Client-side checks, before anything is sent: at the field, in the domain's words.
    await page.getByLabel("Burst (capacity)").fill("0");
    await page.getByRole("button", { name: "Preview change" }).click();
    await expect(page.getByTestId("tier-limit-size-error")).toHaveText(
      "capacity must be at least 1",
    );
    await expect(page.getByTestId("edit-reason-error")).toContainText("Say why");
    await shoot(page, testInfo, "tier-edit-errors");

    await page.getByLabel("Burst (capacity)").fill("150");
    await page.getByLabel("Sustained rate (per second)").fill("75");
    await page
      .getByLabel("Across a Redis failover")
      .selectOption({ label: "wait for a replica (never over the limit)" });
    await page.getByLabel("Reason (required)").fill("e2e: abuse on the tier, tighten by a quarter");
    await page.getByRole("button", { name: "Preview change" }).click();
    const preview = page.getByTestId("change-preview");
    await expect(preview).toBeVisible();
    const change = preview.getByTestId(`preview-tier:${tier}`);
    await expect(change.getByTestId("preview-before")).toContainText("100/s, bursts of 200");
    await expect(change.getByTestId("preview-after")).toContainText("75/s, bursts of 150");
    await expect(preview.getByTestId("preview-stale")).toHaveCount(0);
    await expect(change.getByTestId("preview-customers-in-scope")).toHaveText("2");
    await expect(change.getByTestId("preview-outranked-count")).toHaveAttribute("data-count", "1");
    await expect(change.getByTestId("preview-outranked")).toContainText(customers[0] ?? "");
    await shoot(page, testInfo, "tier-edit-preview");

    // Editing after the preview hides it: what is saved is always what was previewed.
    await page.getByLabel("Sustained rate (per second)").fill("70");
    await expect(page.getByTestId("change-preview")).toHaveCount(0);
    await page.getByLabel("Sustained rate (per second)").fill("75");
    await page.getByRole("button", { name: "Preview change" }).click();
    await page.getByRole("button", { name: "Save change" }).click();
    await expect(page.getByTestId("saved")).toContainText("Policy version");
    const savedVersion = Number(await page.getByTestId("saved-policy-version").textContent());
    expect(savedVersion).toBeGreaterThan(1);
    await expect(page.getByTestId("current-limit")).toContainText("75/s, bursts of 150");
    await shoot(page, testInfo, "tier-edit-saved");

    const audit = await page.request.get(`/api/v1/audit?entityType=tier&entityId=${tier}&limit=5`);
    expect(audit.status()).toBe(200);
    const { entries } = (await audit.json()) as {
      entries: { action: string; reason: string; policyVersion: number | null; after: unknown }[];
    };
    expect(entries[0]).toMatchObject({
      action: "tier.update",
      reason: "e2e: abuse on the tier, tighten by a quarter",
      policyVersion: savedVersion,
      after: { limit: { capacity: 150, refillPerSec: 75, durability: "replicated" } },
    });
    // The API names a bad durability at its field, and saves nothing.
    const refused = await page.request.patch(`/api/v1/tiers/${tier}`, {
      headers: origin,
      data: {
        expectedVersion: 1,
        limit: { algorithm: "token-bucket", capacity: 150, refillPerSec: 75, durability: "sync" },
        reason: "e2e: a durability that does not exist",
      },
    });
    expect(refused.status(), await refused.text()).toBe(400);
    expect(
      ((await refused.json()) as { error: { fieldErrors: { path: string; message: string }[] } })
        .error.fieldErrors,
    ).toContainEqual({
      path: "limit.durability",
      message: "durability must be one of: async, replicated",
    });

    await page.goto("/policies");
    await expect(page.getByTestId("policy-version")).toContainText(String(savedVersion));
    await expect(page.getByTestId("rollout")).toContainText("of 2 enforcers");

    const snapshot = await page.request.get("/api/v1/policy/snapshot");
    expect(((await snapshot.json()) as { version: number }).version).toBeGreaterThanOrEqual(
      savedVersion,
    );
  });

  test("an admin marks a tier's limit global; the preview says so and the API stores global: true", async ({
    page,
  }, testInfo) => {
    await useSession(page.context(), "admin");
    const { tier } = await tierWithCustomers(page.request, 1);
    await page.goto(`/policies/tiers/${tier}`);
    const box = page.getByLabel(
      "Global across regions (one budget divided among regions by demand)",
    );
    await expect(box).not.toBeChecked();
    // Only a token bucket can be divided among regions: another algorithm hides the box and
    // drops the mark, so the form never sends what the schema refuses.
    await box.check();
    await page.getByLabel("Algorithm").selectOption("fixed-window");
    await expect(box).toHaveCount(0);
    await page.getByLabel("Algorithm").selectOption("token-bucket");
    await expect(box).not.toBeChecked();
    await box.check();
    await page.getByLabel("Reason (required)").fill("e2e: one budget for all regions");
    await page.getByRole("button", { name: "Preview change" }).click();
    const change = page.getByTestId(`preview-tier:${tier}`);
    await expect(change.getByTestId("preview-global")).toContainText("per region → global");
    await shoot(page, testInfo, "tier-edit-global-preview");
    await page.getByRole("button", { name: "Save change" }).click();
    await expect(page.getByTestId("saved")).toContainText("Policy version");
    const stored = await page.request.get(`/api/v1/tiers/${tier}`);
    expect(stored.status()).toBe(200);
    expect(((await stored.json()) as { tier: { limit: unknown } }).tier.limit).toEqual({
      algorithm: "token-bucket",
      capacity: 200,
      refillPerSec: 100,
      mode: "enforce",
      onStoreFailure: "open",
      global: true,
    });
    await expect(box).toBeChecked();
  });

  test("an admin gives a tier its own limit on an endpoint class; whole-policy errors land at the field", async ({
    page,
  }, testInfo) => {
    await useSession(page.context(), "admin");
    await page.goto("/policies");
    await page.getByRole("link", { name: "Edit endpoint class reports" }).click();
    await expect(page.getByRole("heading", { level: 1 })).toContainText("Reports");
    await shoot(page, testInfo, "class-edit");

    // A free limit too small for one report (cost 10): the field alone is valid, the policy it
    // would make is not; the preview says so at the field, in the API's words, before any save.
    await page.locator("#limit-free-size").fill("5");
    await page.getByLabel("Reason (required)").fill("e2e: try a tiny free report budget");
    await page.getByRole("button", { name: "Preview change" }).click();
    await expect(page.getByTestId("limit-free-size-error")).toContainText("less than the 10 units");
    await expect(page.getByTestId("form-error")).toBeVisible();
    await expect(page.getByTestId("change-preview")).toHaveCount(0);
    await shoot(page, testInfo, "class-edit-api-error");

    // Nothing was saved: reports keeps its limits. A tier of the test's own gets a search limit
    // instead; its first customer's account override is on another layer, so it does not win.
    const { tier } = await tierWithCustomers(page.request, 2);
    await page.goto("/policies/endpoint-classes/search");
    await page.getByLabel(`Limit for ${tier} customers on this class`).check();
    await page.locator(`#limit-${tier}-size`).fill("40");
    await page.locator(`#limit-${tier}-rate`).fill("4");
    await page.getByLabel("Reason (required)").fill("e2e: search gets its own limit for the tier");
    await page.getByRole("button", { name: "Preview change" }).click();
    const change = page.getByTestId(`preview-tier:${tier}/endpoint:search`);
    await expect(change.getByTestId("preview-before")).toHaveText("no limit of its own");
    await expect(change.getByTestId("preview-after")).toContainText("4/s, bursts of 40");
    await expect(change.getByTestId("preview-customers-in-scope")).toHaveText("2");
    await expect(change.getByTestId("preview-outranked-count")).toHaveAttribute("data-count", "0");
    await shoot(page, testInfo, "class-edit-preview");
    await page.getByRole("button", { name: "Save change" }).click();
    await expect(page.getByTestId("saved")).toContainText("Policy version");
    await expect(page.getByTestId("current-class")).toContainText(`${tier} tier`);
    await expect(page.getByTestId("recent-changes")).toContainText(
      "e2e: search gets its own limit for the tier",
    );
    await shoot(page, testInfo, "class-edit-saved");
  });

  test("an admin loosens the per-customer ceiling; the preview says it reaches every customer", async ({
    page,
  }, testInfo) => {
    await useSession(page.context(), "admin");
    await page.goto("/policies");
    await page.getByRole("link", { name: "Edit" }).first().click();
    await expect(page.getByRole("heading", { level: 1 })).toHaveText("Ceilings and defaults");
    await page.locator("#ceiling-customer-size").fill("12000");
    await page.getByLabel("Reason (required)").fill("e2e: room for a launch");
    await page.getByRole("button", { name: "Preview change" }).click();
    const change = page.getByTestId("preview-ceiling");
    await expect(change.getByTestId("preview-before")).toContainText("bursts of 10,000");
    await expect(change.getByTestId("preview-after")).toContainText("bursts of 12,000");
    await expect(change.getByTestId("preview-reach")).toContainText("every customer");
    await shoot(page, testInfo, "settings-edit-preview");
    await page.getByRole("button", { name: "Save change" }).click();
    await expect(page.getByTestId("saved")).toContainText("Policy version");
    await expect(page.getByTestId("current-per-customer")).toContainText("bursts of 12,000");
    await shoot(page, testInfo, "settings-edit-saved");

    // Put it back, so specs that run later meet the seeded ceiling.
    const settings = await page.request.get("/api/v1/settings");
    const { settings: now } = (await settings.json()) as {
      settings: { version: number; ceilings: { perCustomer: Record<string, unknown> } };
    };
    const restored = await page.request.patch("/api/v1/settings", {
      headers: origin,
      data: {
        expectedVersion: now.version,
        ceilings: { perCustomer: { ...now.ceilings.perCustomer, capacity: 10_000 } },
        reason: "e2e: launch over, back to the seeded ceiling",
      },
    });
    expect(restored.status(), await restored.text()).toBe(200);
  });

  test("a stale version is refused: someone changed it since the page was opened", async ({
    page,
  }, testInfo) => {
    await useSession(page.context(), "admin");
    const { tier: name } = await tierWithCustomers(page.request, 1);
    await page.goto(`/policies/tiers/${name}`);
    await expect(page.getByTestId("current-limit")).toBeVisible();
    // Meanwhile, someone else changes the tier.
    const tier = await page.request.get(`/api/v1/tiers/${name}`);
    const { tier: current } = (await tier.json()) as { tier: { version: number } };
    const other = await page.request.patch(`/api/v1/tiers/${name}`, {
      headers: origin,
      data: {
        expectedVersion: current.version,
        displayName: "Renamed meanwhile",
        reason: "e2e: someone else",
      },
    });
    expect(other.status(), await other.text()).toBe(200);

    await page.getByLabel("Burst (capacity)").fill("4000");
    await page.getByLabel("Reason (required)").fill("e2e: stale edit");
    await page.getByRole("button", { name: "Preview change" }).click();
    // The preview already knows: it was computed against the version now stored.
    await expect(page.getByTestId("preview-stale")).toContainText(
      "has changed since you opened it",
    );
    await page.getByRole("button", { name: "Save change" }).click();
    const conflict = page.getByTestId("version-conflict");
    await expect(conflict).toContainText(`Someone changed tier "${name}" since you opened it`);
    await expect(conflict).toContainText("e2e: someone else");
    await shoot(page, testInfo, "tier-edit-conflict");
    await conflict.getByRole("button", { name: "Reload the current values" }).click();
    await expect(page.getByRole("heading", { level: 1 })).toContainText("Renamed meanwhile");
    await expect(page.getByTestId("version-conflict")).toHaveCount(0);
    await shoot(page, testInfo, "tier-edit-reloaded");
  });

  test("a viewer reads the policy but is offered no edit", async ({ page }, testInfo) => {
    await useSession(page.context(), "viewer");
    await page.goto("/policies");
    await expect(page.getByRole("link", { name: "View tier free" })).toBeVisible();
    await expect(page.getByRole("link", { name: /^Edit/ })).toHaveCount(0);
    await shoot(page, testInfo, "policies-viewer");
    await page.getByRole("link", { name: "View tier free" }).click();
    await expect(page.getByTestId("read-only")).toContainText("Only admins");
    await expect(page.getByRole("button", { name: "Preview change" })).toHaveCount(0);
    await shoot(page, testInfo, "tier-view-viewer");
    const refused = await page.request.patch("/api/v1/tiers/free", {
      headers: origin,
      data: { expectedVersion: 1, displayName: "Nope", reason: "e2e: viewer tries" },
    });
    expect(refused.status()).toBe(403);
  });

  test("the policies page at phone width", async ({ page }, testInfo) => {
    await page.setViewportSize({ width: 390, height: 844 });
    await useSession(page.context(), "admin");
    await page.goto("/policies");
    await expect(page.getByTestId("tiers-table")).toBeVisible();
    await shoot(page, testInfo, "policies-phone");
    await page.goto("/policies/tiers/free");
    await expect(page.getByLabel("Burst (capacity)")).toBeVisible();
    await shoot(page, testInfo, "tier-edit-phone");
  });
});
