/**
 * A staged change's page: an admin starts a 3-step staged change of a stricter tier through the
 * API, the page shows its state, limits, steps and the slice against the rest; an operator aborts
 * it and the page says why it ended. axe-core finds no serious or critical violation at either
 * width.
 */
import { randomBytes } from "node:crypto";
import { expect, test } from "./fixtures";
import { BASE_URL } from "./run-env";
import { seriousViolations } from "./support/axe";
import { useSession } from "./support/shared-sessions";

const origin = { origin: BASE_URL };

test("a staged change's page shows its steps, and after an abort why it ended", async ({
  page,
}) => {
  const tier = `e2e-stg-${randomBytes(3).toString("hex")}`;
  const id = `${tier}-change`;
  await useSession(page.context(), "admin");
  const created = await page.request.post("/api/v1/tiers", {
    headers: origin,
    data: {
      name: tier,
      displayName: `E2E ${tier}`,
      limit: { algorithm: "token-bucket", capacity: 100, refillPerSec: 50 },
      reason: "e2e: a tier to stage",
    },
  });
  expect(created.status(), await created.text()).toBe(201);
  const started = await page.request.post("/api/v1/staged-changes", {
    headers: origin,
    data: {
      id,
      target: `tier:${tier}`,
      limit: { algorithm: "token-bucket", capacity: 50, refillPerSec: 25 },
      steps: [
        { percent: 5, dwellMs: 600_000 },
        { percent: 25, dwellMs: 600_000 },
        { percent: 100, dwellMs: 600_000 },
      ],
      reason: "e2e: halve the tier, carefully",
    },
  });
  expect(started.status(), await started.text()).toBe(201);

  await page.goto(`/staged-changes/${id}`);
  await expect(page.getByRole("heading", { level: 1 })).toContainText(id);
  await expect(page.getByTestId("staged-headline")).toContainText("step 1 of 3 (5 % of subjects)");
  await expect(page.getByRole("listitem").filter({ hasText: "(current)" })).toHaveText(
    "5 % for at least 10 min (current)",
  );
  await expect(page.getByRole("heading", { name: "Slice against the rest" })).toBeVisible();
  for (const viewport of [
    { width: 1280, height: 900 },
    { width: 390, height: 844 },
  ]) {
    await page.setViewportSize(viewport);
    expect(await seriousViolations(page), `axe at ${viewport.width} px`).toEqual([]);
  }

  await useSession(page.context(), "operator");
  const aborted = await page.request.post(`/api/v1/staged-changes/${id}/abort`, {
    headers: origin,
    data: { expectedVersion: 1, reason: "e2e: not today" },
  });
  expect(aborted.status(), await aborted.text()).toBe(200);
  await page.reload();
  await expect(page.getByRole("heading", { level: 1 })).toContainText("aborted");
  await expect(page.getByTestId("staged-end-reason")).toHaveText(
    "aborted by Oscar Operator: e2e: not today",
  );
});
