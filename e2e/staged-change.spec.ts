/**
 * Staged changes in the browser:
 * - an admin stages a stricter tier from its edit form (3 steps), lands on the staged change's
 *   page, sees the slice against the rest on the chart once traffic flows, and steers it with the
 *   buttons: pause, resume, advance, and abort (which asks first); axe-core finds no serious or
 *   critical violation at either width;
 * - a staged change whose new limit rejects most of its slice is reverted by its guard while
 *   traffic flows through the real gateways and worker, and its page says why, with the figures,
 *   and names the guard as the actor;
 * - the approvals and guard defaults page saves the guard defaults, audited, and (with one admin)
 *   says why approvals cannot be turned on.
 */
import { randomBytes } from "node:crypto";
import type { Page } from "@playwright/test";
import { expect, test } from "./fixtures";
import { BASE_URL, GATEWAY_URLS } from "./run-env";
import { seriousViolations } from "./support/axe";
import { apiAs, useSession } from "./support/shared-sessions";

const origin = { origin: BASE_URL };

/** One request per customer, spread over both gateways; the statuses seen. */
async function sendRound(tier: string, customers: readonly string[]): Promise<number[]> {
  return Promise.all(
    customers.map(async (customer, index) => {
      const gateway = GATEWAY_URLS[index % GATEWAY_URLS.length];
      const response = await fetch(`${gateway}/v1/things`, {
        headers: { "x-customer-id": customer, "x-tier": tier },
      });
      await response.arrayBuffer();
      return response.status;
    }),
  );
}

async function createTier(page: Page, tier: string, capacity: number): Promise<void> {
  const created = await page.request.post("/api/v1/tiers", {
    headers: origin,
    data: {
      name: tier,
      displayName: `E2E ${tier}`,
      limit: { algorithm: "token-bucket", capacity, refillPerSec: capacity / 2 },
      reason: "e2e: a tier to stage",
    },
  });
  expect(created.status(), await created.text()).toBe(201);
}

async function steer(page: Page, button: string, reason: string): Promise<void> {
  await page.getByLabel("Reason (required)").fill(reason);
  await page.getByRole("button", { name: button, exact: true }).click();
}

test("an admin stages a stricter tier from its form, watches the chart and steers it", async ({
  page,
}) => {
  test.setTimeout(120_000);
  const tier = `e2e-stg-${randomBytes(3).toString("hex")}`;
  const customers = Array.from({ length: 60 }, (_, index) => `${tier}-c${index}`);
  await useSession(page.context(), "admin");
  await createTier(page, tier, 100);

  await page.goto(`/policies/tiers/${tier}`);
  await page.locator("#tier-limit-size").fill("50");
  await page.getByRole("radio", { name: "Stage it over a slice of subjects" }).check();
  await expect(page.getByLabel("Step 1: percent of subjects")).toHaveValue("5");
  await expect(page.getByLabel("Step 3: percent of subjects")).toHaveValue("100");
  await page.getByLabel("Reason (required)").fill("e2e: halve the tier, carefully");
  await page.getByRole("button", { name: "Preview change" }).click();
  await page.getByRole("button", { name: "Start the staged change" }).click();

  await expect(page).toHaveURL(/\/staged-changes\/staged-[0-9a-f]+$/);
  await expect(page.getByRole("heading", { level: 1 })).toContainText("running");
  await expect(page.getByTestId("staged-headline")).toContainText(`tier:${tier}`);
  await expect(page.getByTestId("staged-headline")).toContainText("step 1 of 3 (5 % of subjects)");
  await expect(page.getByTestId("staged-chart-markers")).toContainText("Step 1: 5 %");

  // Traffic of the tier reaches the chart: its numbers show the minute's requests.
  await expect
    .poll(
      async () => {
        await sendRound(tier, customers);
        await page.reload();
        await page.getByText("Show the numbers").click();
        return page.getByRole("row").filter({ hasText: "/" }).count();
      },
      { timeout: 45_000, intervals: [1_000, 2_000] },
    )
    .toBeGreaterThan(0);
  await expect(page.getByRole("figure", { name: /slice against the rest/ })).toBeVisible();

  for (const viewport of [
    { width: 1280, height: 900 },
    { width: 390, height: 844 },
  ]) {
    await page.setViewportSize(viewport);
    expect(await seriousViolations(page), `axe at ${viewport.width} px`).toEqual([]);
  }

  await steer(page, "Pause", "e2e: hold it while we look");
  await expect(page.getByRole("heading", { level: 1 })).toContainText("paused");
  await expect(page.getByRole("button", { name: "Pause", exact: true })).toHaveCount(0);
  await steer(page, "Resume", "e2e: looks fine");
  await expect(page.getByRole("heading", { level: 1 })).toContainText("running");
  await steer(page, "Advance to the next step", "e2e: widen it");
  await expect(page.getByTestId("staged-headline")).toContainText("step 2 of 3 (25 % of subjects)");
  await expect(page.getByTestId("staged-chart-markers")).toContainText("Step 2: 25 %");

  // Abort asks first; cancelling changes nothing.
  await page.getByLabel("Reason (required)").fill("e2e: not today");
  await page.getByRole("button", { name: "Abort", exact: true }).click();
  const dialog = page.getByRole("dialog", { name: /Abort staged change/ });
  await expect(dialog).toBeVisible();
  await dialog.getByRole("button", { name: "Cancel" }).click();
  await expect(page.getByRole("heading", { level: 1 })).toContainText("running");
  await page.getByRole("button", { name: "Abort", exact: true }).click();
  await dialog.getByRole("button", { name: "Abort the staged change" }).click();
  await expect(page.getByRole("heading", { level: 1 })).toContainText("aborted");
  await expect(page.getByTestId("staged-end-reason")).toHaveText(
    "aborted by Ada Admin: e2e: not today",
  );
  await expect(page.getByTestId("staged-actions")).toHaveCount(0);
});

test("the guard reverts a staged change whose slice is rejected far more than the rest", async ({
  page,
}) => {
  test.setTimeout(120_000);
  const tier = `e2e-grd-${randomBytes(3).toString("hex")}`;
  const id = `${tier}-change`;
  const customers = Array.from({ length: 40 }, (_, index) => `${tier}-c${index}`);
  await useSession(page.context(), "admin");
  await createTier(page, tier, 1000);
  const started = await page.request.post("/api/v1/staged-changes", {
    headers: origin,
    data: {
      id,
      target: `tier:${tier}`,
      // Ten requests (the dearest endpoint class's cost), then one every ten seconds: once the
      // burst is spent, nearly all of the slice's traffic is rejected.
      limit: { algorithm: "token-bucket", capacity: 10, refillPerSec: 0.1 },
      steps: [
        { percent: 50, dwellMs: 600_000 },
        { percent: 100, dwellMs: 600_000 },
      ],
      guard: { marginPercent: 5, minRequests: 20, windowMs: 1_000, consecutiveWindows: 2 },
      reason: "e2e: a change the guard must catch",
    },
  });
  expect(started.status(), await started.text()).toBe(201);

  const admin = await apiAs("admin");
  await expect
    .poll(
      async () => {
        await sendRound(tier, customers);
        const response = await admin.get(`/api/v1/staged-changes/${id}`);
        const body = (await response.json()) as { stagedChange: { state: string } };
        return body.stagedChange.state;
      },
      { timeout: 60_000, intervals: [200, 300, 500] },
    )
    .toBe("reverted");

  await page.goto(`/staged-changes/${id}`);
  await expect(page.getByRole("heading", { level: 1 })).toContainText("reverted");
  await expect(page.getByTestId("staged-end-reason")).toHaveText(
    /^reverted by its guard: the slice's rejection rate exceeded the rest's by more than 5 points for 2 windows of 1 s in a row: slice \d+\/\d+ \(\d+\.\d %\) vs rest 0\/\d+ \(0\.0 %\); slice \d+\/\d+/,
  );
  await expect(page.getByText("by Staged change guard").first()).toBeVisible();
  await expect(page.getByTestId("staged-chart-markers")).toContainText("Reverted by its guard");
  await expect(page.getByTestId("staged-actions")).toHaveCount(0);
  // Everyone is back under the old limit once the gateways have the reverting version.
  await expect
    .poll(async () => (await sendRound(tier, customers)).filter((status) => status !== 200), {
      timeout: 20_000,
      intervals: [200, 500, 1_000],
    })
    .toEqual([]);
});

test("the approvals and guard page saves the guard defaults, audited", async ({ page }) => {
  await useSession(page.context(), "admin");
  await page.goto("/policies/safe-changes");
  await expect(page.getByRole("heading", { level: 1 })).toHaveText(
    "Approvals and the staged change guard",
  );
  await expect(page.getByTestId("eligible-approvers")).toContainText("may approve");
  // With one admin (this spec alone; approvals.spec adds a second), turning approvals on is
  // refused, and both the page and the form say why.
  const eligible = Number(
    /^(\d+) enabled/.exec((await page.getByTestId("eligible-approvers").textContent()) ?? "")?.[1],
  );
  const approvals = page.getByRole("form", { name: "Approval settings" });
  if (eligible < 2) {
    await expect(page.getByTestId("approvers-short")).toContainText(
      "Approvals cannot be turned on yet",
    );
    await approvals.getByLabel("Require a second person for the changes below").check();
    await approvals.getByLabel("Reason (required)").fill("e2e: four eyes");
    await approvals.getByRole("button", { name: "Save approval settings" }).click();
    await expect(approvals.getByTestId("settings-error")).toContainText(
      "Approvals need at least 2 enabled admins",
    );
    await page.reload();
  } else {
    await expect(page.getByTestId("approvers-short")).toHaveCount(0);
  }
  for (const viewport of [
    { width: 1280, height: 900 },
    { width: 390, height: 844 },
  ]) {
    await page.setViewportSize(viewport);
    expect(await seriousViolations(page), `axe at ${viewport.width} px`).toEqual([]);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
  const form = page.getByRole("form", { name: "Staged change guard defaults" });
  const margin = form.getByLabel("Margin (percentage points)");
  const before = await margin.inputValue();
  await margin.fill("-1");
  await form.getByLabel("Reason (required)").fill("e2e: a wrong margin");
  await form.getByRole("button", { name: "Save guard defaults" }).click();
  await expect(form.getByTestId("settings-error")).toContainText(
    "marginPercent must be at least 0",
  );
  await margin.fill("7");
  await form.getByRole("button", { name: "Save guard defaults" }).click();
  await expect(form.getByTestId("settings-saved")).toBeVisible();
  await expect(page.getByTestId("guard-defaults")).toContainText("by more than 7 points");
  await expect(page.getByTestId("recent-changes")).toContainText(
    "staged-guard-settings.update by Ada Admin",
  );
  // Put the default back for later specs.
  await margin.fill(before);
  await form.getByLabel("Reason (required)").fill("e2e: back to the default");
  await form.getByRole("button", { name: "Save guard defaults" }).click();
  await expect(page.getByTestId("guard-defaults")).toContainText(`by more than ${before} points`);
});

test("an admin stages a dry-run candidate from its page", async ({ page }) => {
  const tier = `e2e-cnd-${randomBytes(3).toString("hex")}`;
  const id = `${tier}-halved`;
  await useSession(page.context(), "admin");
  await createTier(page, tier, 100);
  const made = await page.request.post("/api/v1/candidates", {
    headers: origin,
    data: {
      id,
      target: `tier:${tier}`,
      limit: { algorithm: "token-bucket", capacity: 50, refillPerSec: 25 },
      reason: "e2e: try half",
    },
  });
  expect(made.status(), await made.text()).toBe(201);

  await page.goto(`/dry-run/${id}`);
  const box = page.getByTestId("stage-candidate");
  await box.getByLabel("Step 2: percent of subjects").fill("50");
  await box.getByLabel("Reason (required)").fill("e2e: half looked right, stage it");
  await box.getByRole("button", { name: "Stage it…" }).click();
  await page
    .getByRole("dialog", { name: `Stage candidate ${id}?` })
    .getByRole("button", { name: "Start the staged change" })
    .click();
  await expect(page).toHaveURL(new RegExp(`/staged-changes/${id}$`));
  await expect(page.getByTestId("staged-headline")).toContainText("step 1 of 3 (5 % of subjects)");
  await expect(page.getByRole("listitem").filter({ hasText: "50 % for at least" })).toHaveCount(1);

  await page.goto(`/dry-run/${id}`);
  await expect(page.getByTestId("candidate-staged")).toContainText("now at 5 % of subjects");
});
