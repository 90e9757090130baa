/**
 * A customer the registry does not hold, seen by the gateways: an operator finds it on
 * /customers (under "Seen by gateways"), opens its page (the tier "reported by gateways", the
 * limits in effect, its rejections), raises its limit ×3 from there, and the raise registers it
 * (its own audit entry) while every enforcer confirms; the gateways then admit more.
 *
 * Traffic: `GET /v1/things` (endpoint class `default`) with `x-customer-id` and `x-tier: free` (the
 * demo gateway's identify: the tier from a header, for the demo only). Tier free: a token bucket
 * of 20 refilling 10/s on the account layer, so a burst from a full bucket admits at least 20
 * before and at least 60 after.
 */
import { randomBytes } from "node:crypto";
import type { APIRequestContext } from "@playwright/test";
import { expect, test } from "./fixtures";
import { GATEWAY_URLS } from "./run-env";

const CUSTOMER = `hooli-${randomBytes(3).toString("hex")}`;
const BURST = 120;

async function burst(count: number): Promise<{ allowed: number; rejected: number }> {
  let allowed = 0;
  let rejected = 0;
  for (let index = 0; index < count; index++) {
    const gateway = GATEWAY_URLS[index % GATEWAY_URLS.length];
    const response = await fetch(`${gateway}/v1/things`, {
      headers: { "x-customer-id": CUSTOMER, "x-tier": "free" },
    });
    await response.arrayBuffer();
    if (response.status === 200) allowed++;
    else if (response.status === 429) rejected++;
    else throw new Error(`gateway answered ${response.status}`);
  }
  return { allowed, rejected };
}

/** Waits (polling the read-only peek) until the account bucket is full at `capacity`. */
async function untilFull(request: APIRequestContext, capacity: number): Promise<void> {
  await expect
    .poll(
      async () => {
        const response = await request.get(
          `/api/v1/explain?customerId=${CUSTOMER}&tier=free&endpointClass=default`,
        );
        const body = (await response.json()) as {
          checks: { layer: string; mode: string; live: { limit: number; remaining: number } }[];
        };
        const live = body.checks?.find((c) => c.layer === "account" && c.mode === "enforce")?.live;
        return live !== undefined && live.limit === capacity && live.remaining >= capacity - 1;
      },
      { timeout: 20_000, intervals: [200, 300, 500] },
    )
    .toBe(true);
}

test("an operator raises the limit of a customer only the gateways know; the raise registers it and the gateways admit more", async ({
  page,
  signIn,
}) => {
  test.setTimeout(120_000);
  await signIn("operator");
  const api = page.request;

  // Not in the registry.
  expect((await api.get(`/api/v1/customers/${CUSTOMER}`)).status()).toBe(404);
  await untilFull(api, 20);
  const before = await burst(BURST);
  console.log(`before the raise: ${before.allowed} of ${BURST} admitted`);
  expect(before.allowed).toBeGreaterThanOrEqual(20);
  expect(before.rejected).toBeGreaterThan(0);

  // The gateways report it within a flush: search until it is listed.
  await expect(async () => {
    await page.goto(`/customers?q=${CUSTOMER}`);
    await expect(page.getByTestId("seen-customer-row")).toHaveCount(1, { timeout: 1_000 });
  }).toPass({ timeout: 20_000 });
  await expect(page.getByTestId("customer-row")).toHaveCount(0);
  await expect(page.getByTestId("seen-customer-row")).toContainText("free");
  await page.getByRole("link", { name: CUSTOMER, exact: true }).click();

  // Its page: the reported tier (said as such), the limits in effect and its rejections.
  await expect(page.getByRole("heading", { level: 1 })).toContainText(CUSTOMER);
  await expect(page.getByTestId("reported-tier")).toContainText("free");
  await expect(page.getByTestId("reported-tier")).toContainText("reported by gateways");
  await expect(page.getByTestId("seen-only")).toBeVisible();
  await expect(
    page.locator('[data-testid="class-limits"][data-class="default"]').first(),
  ).toContainText("tier:free");
  await expect(async () => {
    await page.reload();
    await expect(page.getByTestId("rejection-row").first()).toBeVisible({ timeout: 1_000 });
  }).toPass({ timeout: 20_000 });
  await expect(page.getByTestId("rejection-row").first()).toContainText("tier:free");

  // The raise, from the customer page.
  await page.getByRole("link", { name: "Raise limit (incident)" }).click();
  await expect(page.getByRole("heading", { name: "Raise a limit (incident)" })).toBeVisible();
  await expect(page.getByLabel("Scope")).toHaveValue("account");
  const reason = `e2e: ${CUSTOMER} is retrying after our outage (${Date.now()})`;
  await page.getByLabel("Reason (required)").fill(reason);
  await expect(page.getByTestId("incident-summary")).toContainText(
    "all endpoints 10/s, bursts of 20 → 30/s, bursts of 60 for 15 min",
  );
  await page.getByRole("button", { name: "Review and raise" }).click();
  const dialog = page.getByRole("dialog");
  await expect(dialog.getByTestId("registers-customer")).toContainText(
    `${CUSTOMER} is not in the registry: raising also registers it, with tier free`,
  );
  await dialog.getByRole("button", { name: "Raise limit" }).click();
  await page.waitForURL(/\/incidents\/inc-[0-9a-f]+$/);
  await expect(page.getByText("all confirmed")).toBeVisible({ timeout: 30_000 });

  // Registered, with its own audit entry, before the raise's.
  const registered = await api.get(`/api/v1/customers/${CUSTOMER}`);
  expect(registered.status(), await registered.text()).toBe(200);
  expect(((await registered.json()) as { customer: { tier: string } }).customer.tier).toBe("free");
  const audit = await api.get(`/api/v1/audit?customerId=${CUSTOMER}`);
  const entries = (
    (await audit.json()) as {
      entries: { action: string; reason: string; after: Record<string, unknown> }[];
    }
  ).entries;
  expect(entries.map((entry) => entry.action)).toEqual(["incident.raise", "customer.create"]);
  expect(entries[1]).toMatchObject({
    reason,
    after: { registeredFrom: "gateway-report", reportedTier: "free", tier: "free" },
  });

  // After: the gateways admit the raised limit.
  await untilFull(api, 60);
  const raised = await burst(BURST);
  console.log(`after the raise: ${raised.allowed} of ${BURST} admitted`);
  expect(raised.allowed).toBeGreaterThanOrEqual(60);
  expect(raised.allowed).toBeGreaterThan(before.allowed);

  // Its page is now the registry's.
  await page.goto(`/customers/${CUSTOMER}`);
  await expect(page.getByTestId("seen-only")).toHaveCount(0);
  await expect(page.getByTestId("active-incident")).toHaveCount(1);
});
