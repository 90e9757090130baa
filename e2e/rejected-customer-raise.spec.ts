/**
 * Who is hurting, end to end: a customer is rejected at the run's two demo gateways, the overview's
 * "Who is being rejected" lists it first, and an operator raises its limit from there in at most
 * three clicks (Raise, Review and raise, Raise limit) plus typing a reason; every enforcer
 * confirms and the gateways admit more. The Customers list shows the same customer first when
 * sorted by rejections.
 *
 * Traffic: `GET /v1/things` (endpoint class `default`) with `x-customer-id` and `x-tier: free` (the
 * demo gateway's identify). Tier free: a token bucket of 20 refilling 10/s on the account layer,
 * so a burst from a full bucket admits at least 20 before and at least 60 after a ×3 raise.
 */
import { randomBytes } from "node:crypto";
import type { APIRequestContext } from "@playwright/test";
import { expect, test } from "./fixtures";
import { GATEWAY_URLS } from "./run-env";

const CUSTOMER = `vandelay-${randomBytes(3).toString("hex")}`;
/** More than any other spec sends one customer, so this one is the most rejected. */
const BURST = 400;

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

/** Waits (polling the read-only peek, no sleeps) until the account bucket is full at `capacity`. */
async function untilFull(request: APIRequestContext, capacity: number): Promise<void> {
  await expect
    .poll(
      async () => {
        const response = await request.get(
          `/api/v1/explain?customerId=${CUSTOMER}&tier=free&endpointClass=default`,
        );
        const body = (await response.json()) as {
          checks?: { layer: string; mode: string; live: { limit: number; remaining: number } }[];
        };
        const live = body.checks?.find((c) => c.layer === "account" && c.mode === "enforce")?.live;
        return live !== undefined && live.limit === capacity && live.remaining >= capacity - 1;
      },
      { timeout: 20_000, intervals: [200, 300, 500] },
    )
    .toBe(true);
}

test("the overview names the most rejected customer and raises it in three clicks; the gateways admit more", async ({
  page,
  signIn,
}) => {
  test.setTimeout(120_000);
  await signIn("operator");
  const api = page.request;

  await untilFull(api, 20);
  const before = await burst(BURST);
  console.log(`before the raise: ${before.allowed} of ${BURST} admitted`);
  expect(before.rejected).toBeGreaterThan(BURST / 2);

  // The gateways flush their tally every second: reload until the overview ranks it first.
  const firstRow = page.getByTestId("rejected-customer-row").first();
  await expect(async () => {
    await page.goto("/?range=15m");
    await expect(firstRow).toContainText(CUSTOMER, { timeout: 1_000 });
  }).toPass({ timeout: 20_000 });
  await expect(firstRow).toContainText("tier:free");
  await expect(firstRow.getByRole("img")).toBeVisible();
  // The API answers the same (for alerting tools). The overview may have ranked the customer
  // first on the first gateway's flush; the count is exact once both gateways have flushed.
  type Ranked = { customers: { customerId: string; rejected: number; bindingScope: string }[] };
  let top: Ranked = { customers: [] };
  await expect
    .poll(
      async () => {
        const ranked = await api.get("/api/v1/rejected-customers?minutes=15&limit=1");
        expect(ranked.status(), await ranked.text()).toBe(200);
        top = (await ranked.json()) as Ranked;
        return top.customers[0]?.rejected;
      },
      { timeout: 20_000, intervals: [250, 500, 1_000] },
    )
    .toBe(before.rejected);
  expect(top.customers[0]).toMatchObject({ customerId: CUSTOMER, bindingScope: "tier:free" });

  // From the overview to a confirmed raise: clicks counted, seconds measured.
  const startedAtMs = Date.now();
  let clicks = 0;
  await firstRow.getByRole("link", { name: /^Raise / }).click();
  clicks++;
  await expect(page.getByRole("heading", { name: "Raise a limit (incident)" })).toBeVisible();
  // Prefilled: this customer, the layer that rejected it, ×3 for 15 minutes.
  await expect(page.getByText(CUSTOMER).first()).toBeVisible();
  await expect(page.getByLabel("Scope")).toHaveValue("account");
  await expect(page.getByLabel("Multiply by")).toHaveValue("3");
  // Untouched, the form names what it still needs, and marks nothing.
  await expect(page.getByTestId("incident-blocked")).toHaveText("Fill in Reason to continue.");
  await expect(page.getByTestId("field-error")).toHaveCount(0);
  await page.getByLabel("Reason (required)").fill(`e2e: ${CUSTOMER} is rejected at its tier`);
  await page.getByRole("button", { name: "Review and raise" }).click();
  clicks++;
  await page.getByRole("dialog").getByRole("button", { name: "Raise limit" }).click();
  clicks++;
  await page.waitForURL(/\/incidents\/inc-[0-9a-f]+$/);
  await expect(page.getByText("all confirmed")).toBeVisible({ timeout: 30_000 });
  const seconds = (Date.now() - startedAtMs) / 1000;
  console.log(
    `overview → every enforcer confirming: ${clicks} clicks (plus typing the reason), ${seconds.toFixed(1)} s`,
  );
  expect(clicks).toBeLessThanOrEqual(3);

  await untilFull(api, 60);
  const raised = await burst(120);
  console.log(`after the raise: ${raised.allowed} of 120 admitted`);
  expect(raised.allowed).toBeGreaterThanOrEqual(60);

  // The audit entry reads as a sentence with the numbers: the limit before and after, the span
  // and its end, the raw fields behind the disclosure.
  const incidentId = new URL(page.url()).pathname.split("/").at(-1) ?? "";
  await page.goto(`/audit?entityType=incident&entityId=${incidentId}`);
  const audited = page.getByTestId("audit-entry").first();
  await expect(audited.getByTestId("audit-summary")).toHaveText(
    new RegExp(
      `^${CUSTOMER}, all endpoints: 10/s, bursts of 20 → 30/s, bursts of 60 for 15 min \\(until (\\d{4}-\\d\\d-\\d\\d )?\\d\\d:\\d\\d UTC\\)$`,
    ),
  );

  // The Customers list sorted by rejections puts it first (registered by the raise now).
  await page.goto("/customers?sort=rejected");
  await expect(page.getByTestId("customer-row").first()).toContainText(CUSTOMER);
  await expect(page.getByRole("columnheader", { name: /Rejected, last hour/ })).toHaveAttribute(
    "aria-sort",
    "descending",
  );
});

test("anonymous rejections are ranked per limit on the overview, each linked to its limit", async ({
  page,
  signIn,
}) => {
  await signIn("operator");
  // Sign-in is limited per address and route for requests without a customer: 10 per 15 minutes.
  let rejected = 0;
  for (let index = 0; index < 30; index++) {
    const gateway = GATEWAY_URLS[index % GATEWAY_URLS.length];
    const response = await fetch(`${gateway}/v1/auth/sign-in`, { method: "POST" });
    await response.arrayBuffer();
    if (response.status === 429) rejected++;
  }
  expect(rejected).toBeGreaterThanOrEqual(20);

  // The API counts them per limit, never per address; the gateways flush every second.
  type Ranked = { anonymous: { scope: string; rejected: number }[]; anonymousRejected: number };
  await expect
    .poll(
      async () => {
        const ranked = await page.request.get("/api/v1/rejected-customers?minutes=15");
        expect(ranked.status(), await ranked.text()).toBe(200);
        const body = (await ranked.json()) as Ranked;
        return body.anonymous.find((entry) => entry.scope === "address/endpoint:sign-in")?.rejected;
      },
      { timeout: 20_000, intervals: [250, 500, 1_000] },
    )
    .toBeGreaterThanOrEqual(rejected);

  await page.goto("/?range=15m");
  const row = page
    .getByTestId("rejected-anonymous-row")
    .filter({ hasText: "address/endpoint:sign-in" });
  await expect(row).toBeVisible();
  await expect(row).toContainText("anonymous requests to sign-in, per address");
  await expect(row.getByRole("img")).toBeVisible();
  // An operator may not edit the endpoint class, but may try a looser limit in dry-run first.
  await expect(row.getByRole("link", { name: "Try a looser limit in dry-run" })).toHaveAttribute(
    "href",
    "/dry-run?target=address%2Fendpoint%3Asign-in",
  );
  await row.getByRole("link", { name: "View endpoint class sign-in's anonymous limit" }).click();
  await page.waitForURL(/\/policies\/endpoint-classes\/sign-in$/);
});
