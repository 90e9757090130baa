/**
 * The incident operator's flow, end to end against the run's console, worker and two demo
 * gateways: a customer is rejected, an operator finds it, raises its account limit ×3 for 15
 * minutes through the UI, every enforcer confirms, the gateways admit more, the audit log holds
 * the change, and reverting brings the old limit back.
 *
 * Traffic: `GET /v1/things` (endpoint class `default`, cost 1) as `initech` (tier free: a token
 * bucket of 20, refilling 10/s, on the account layer; nothing tighter). A burst starts from a full
 * bucket (the explain API's peek says so), so it admits the capacity plus what refills during the
 * burst: at least 20 before, at least 60 after the raise.
 */
import type { APIRequestContext, Page } from "@playwright/test";
import { expect, test } from "./fixtures";
import { BASE_URL, GATEWAY_URLS } from "./run-env";
import { apiAs } from "./support/shared-sessions";

const CUSTOMER = "initech";
const BURST = 120;

async function burst(
  customerId: string,
  count: number,
): Promise<{ allowed: number; rejected: number }> {
  let allowed = 0;
  let rejected = 0;
  for (let index = 0; index < count; index++) {
    const gateway = GATEWAY_URLS[index % GATEWAY_URLS.length];
    const response = await fetch(`${gateway}/v1/things`, {
      headers: { "x-customer-id": customerId },
    });
    await response.arrayBuffer();
    if (response.status === 200) allowed++;
    else if (response.status === 429) rejected++;
    else throw new Error(`gateway answered ${response.status}`);
  }
  return { allowed, rejected };
}

/** The account layer's live bucket, from the explain API's read-only peek. */
async function accountBucket(request: APIRequestContext) {
  const response = await request.get(
    `/api/v1/explain?customerId=${CUSTOMER}&endpointClass=default`,
  );
  expect(response.status(), await response.text()).toBe(200);
  const body = (await response.json()) as {
    checks: { layer: string; mode: string; live: { limit: number; remaining: number } | null }[];
  };
  const check = body.checks.find((c) => c.layer === "account" && c.mode === "enforce");
  return check?.live ?? null;
}

/** Waits (polling the peek, no sleeps) until the account bucket is full at `capacity`. */
async function untilFull(request: APIRequestContext, capacity: number): Promise<void> {
  await expect
    .poll(
      async () => {
        const live = await accountBucket(request);
        // The peek says what one more request (cost 1) would leave: a full bucket leaves capacity - 1.
        return live !== null && live.limit === capacity && live.remaining >= capacity - 1;
      },
      { timeout: 20_000, intervals: [200, 300, 500] },
    )
    .toBe(true);
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: test.info().outputPath(`${name}.png`), fullPage: true });
}

test("an operator raises a rejected customer's limit for 15 minutes, every enforcer confirms, and reverting restores it", async ({
  page,
  signIn,
}) => {
  test.setTimeout(120_000);
  await signIn("operator");
  const api = page.request;

  // Before: a burst from a full bucket admits the tier's 20 (plus what refills meanwhile).
  await untilFull(api, 20);
  const before = await burst(CUSTOMER, BURST);
  console.log(
    `before the raise: ${before.allowed} of ${BURST} admitted, ${before.rejected} rejected`,
  );
  expect(before.allowed).toBeGreaterThanOrEqual(20);
  expect(before.rejected).toBeGreaterThan(0);

  // The operator finds the customer.
  await page.goto("/customers");
  await shot(page, "customers");
  await page.getByLabel("Identifier or name").fill(CUSTOMER);
  await page.getByRole("button", { name: "Search" }).click();
  await expect(page.getByTestId("customer-row")).toHaveCount(1);
  await shot(page, "customers-search");
  await page.getByRole("link", { name: CUSTOMER, exact: true }).click();
  await expect(page.getByRole("heading", { level: 1 })).toContainText("Initech");
  // Rejections reach Redis within a flush (1 s): reload until the page lists them.
  await expect(async () => {
    await page.reload();
    await expect(page.getByTestId("rejection-row").first()).toBeVisible({ timeout: 1_000 });
  }).toPass({ timeout: 20_000 });
  await expect(page.getByTestId("rejection-row").first()).toContainText("tier:free");
  await shot(page, "customer");
  // What the page costs the server (explain and peek per endpoint class, rejections, history):
  // measured, not asserted.
  const serverMs = await page.evaluate(() => {
    const [navigation] = performance.getEntriesByType(
      "navigation",
    ) as PerformanceNavigationTiming[];
    return navigation === undefined
      ? null
      : Math.round(navigation.responseEnd - navigation.requestStart);
  });
  console.log(
    `customer page: whole streamed HTML in ${serverMs} ms (4 endpoint classes, one peek each)`,
  );

  // From here: clicks and seconds until every enforcer runs the change.
  const startedAtMs = Date.now();
  let clicks = 0;
  await page.getByRole("link", { name: "Raise limit (incident)" }).click();
  clicks++;
  await expect(page.getByRole("heading", { name: "Raise a limit (incident)" })).toBeVisible();
  // Preselected from the latest rejection: the account layer; multiplier ×3, 15 min by default.
  await expect(page.getByLabel("Scope")).toHaveValue("account");
  await expect(page.getByLabel("Multiply by")).toHaveValue("3");
  await expect(page.getByRole("radio", { name: "15 min" })).toBeChecked();
  // A multiplier beyond the guardrail is refused at the field before anything is sent.
  await page.getByLabel("Multiply by").fill("50");
  await expect(page.getByTestId("field-error").first()).toContainText(
    "factor 50 would raise the limit 50x; the maximum raise is 10x (guardrails.maxIncidentFactor)",
  );
  await expect(page.getByRole("button", { name: "Review and raise" })).toBeDisabled();
  await page.getByLabel("Multiply by").fill("3");
  const reason = `e2e: initech is backfilling after an outage (${Date.now()})`;
  await page.getByLabel("Reason (required)").fill(reason);
  await expect(page.getByTestId("incident-summary")).toContainText(
    "initech: all endpoints 10/s, bursts of 20 → 30/s, bursts of 60 for 15 min, until",
  );
  await shot(page, "incident-new");
  await page.getByRole("button", { name: "Review and raise" }).click();
  clicks++;
  const dialog = page.getByRole("dialog");
  await expect(dialog).toContainText("10/s, bursts of 20 → 30/s, bursts of 60 for 15 min");
  await shot(page, "incident-new-confirm");
  await dialog.getByRole("button", { name: "Raise limit" }).click();
  clicks++;
  await page.waitForURL(/\/incidents\/inc-[0-9a-f]+$/);
  const incidentId = decodeURIComponent(new URL(page.url()).pathname.split("/").pop() ?? "");
  await expect(page.getByTestId("incident-headline")).toContainText(
    "10/s, bursts of 20 → 30/s, bursts of 60",
  );
  await expect(page.getByText("all confirmed")).toBeVisible({ timeout: 30_000 });
  const seconds = (Date.now() - startedAtMs) / 1000;
  console.log(
    `customer page → every enforcer confirming: ${clicks} clicks (plus typing the reason), ${seconds.toFixed(1)} s`,
  );
  const enforcers = page.getByTestId("enforcer-row");
  expect(await enforcers.count()).toBeGreaterThanOrEqual(GATEWAY_URLS.length);
  await expect(page.locator('[data-testid="enforcer-row"][data-confirmed="false"]')).toHaveCount(0);
  await shot(page, "incident");

  // After: the gateways admit the raised limit.
  await untilFull(api, 60);
  const raised = await burst(CUSTOMER, BURST);
  console.log(`after the raise: ${raised.allowed} of ${BURST} admitted`);
  expect(raised.allowed).toBeGreaterThanOrEqual(60);
  expect(raised.allowed).toBeGreaterThan(before.allowed);

  // The audit log holds the change: actor, before, after and reason.
  const auditResponse = await api.get(
    `/api/v1/audit?entityType=incident&entityId=${encodeURIComponent(incidentId)}`,
  );
  expect(auditResponse.status(), await auditResponse.text()).toBe(200);
  const audit = (await auditResponse.json()) as {
    entries: {
      action: string;
      actor: { name: string; type: string };
      before: unknown;
      after: { customerId: string; endpointClass: string | null; factor: number; reason: string };
      reason: string;
      policyVersion: number | null;
    }[];
  };
  const raise = audit.entries.find((entry) => entry.action === "incident.raise");
  expect(raise).toBeDefined();
  expect(raise?.actor).toMatchObject({ name: "Oscar Operator", type: "operator" });
  expect(raise?.reason).toBe(reason);
  expect(raise?.before).toBeNull();
  expect(raise?.after).toMatchObject({
    customerId: CUSTOMER,
    endpointClass: null,
    factor: 3,
    reason,
  });
  expect(raise?.policyVersion).not.toBeNull();

  // The customer page shows the override and its history.
  await page.goto(`/customers/${CUSTOMER}`);
  await expect(page.getByTestId("active-incident")).toContainText(incidentId);
  await expect(page.getByTestId("history-entry").first()).toContainText("incident.raise");
  await expect(page.getByTestId("history-entry").first()).toContainText(reason);
  await shot(page, "customer-raised");

  // The overrides page lists it in force, with its countdown; 15 min left is "expiring soon".
  await page.goto("/overrides");
  await expect(page.getByRole("list", { name: "Alerts" })).toContainText(incidentId);
  await expect(page.getByTestId("current-incident").filter({ hasText: incidentId })).toContainText(
    "left",
  );
  // The seed's standing override for globex is listed too.
  await expect(page.getByTestId("customer-override-row").first()).toContainText("globex");
  await shot(page, "overrides");

  // Extend: one click moves the expiry 15 minutes later, and the enforcers confirm again.
  await page.goto(`/incidents/${incidentId}`);
  await expect(page.getByTestId("incident-headline")).toContainText(/1[0-4] min \d+ s left/);
  // No reason comes pre-filled: extending without one says what is missing and changes nothing.
  const extendReason = page.getByLabel("Reason to extend (required)");
  await expect(extendReason).toHaveValue("");
  await expect(page.getByLabel("Reason to revert (required)")).toHaveValue("");
  await expect(page.getByRole("button", { name: "Revert now" })).toBeDisabled();
  await page.getByRole("button", { name: "Extend +15 min" }).click();
  await expect(page.getByText("Reason must not be empty.")).toBeVisible();
  await expect(extendReason).toBeFocused();
  await expect(page.getByTestId("incident-headline")).toContainText(/1[0-4] min \d+ s left/);
  await extendReason.fill("e2e: the migration needs another quarter hour");
  await page.getByRole("button", { name: "Extend +15 min" }).click();
  await expect(page.getByTestId("incident-headline")).toContainText(/(29|30) min( \d+ s)? left/);
  await expect(page.getByText("all confirmed")).toBeVisible({ timeout: 30_000 });
  await shot(page, "incident-extended");

  // Revert restores the old limit.
  await page.getByLabel("Reason to revert (required)").fill("e2e: the migration finished");
  await page.getByRole("button", { name: "Revert now" }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Revert override" }).click();
  await expect(page.getByRole("heading", { level: 1 })).toContainText("reverted");
  await expect(page.getByText("all confirmed")).toBeVisible({ timeout: 30_000 });
  await shot(page, "incident-reverted");
  await page.goto("/overrides");
  await expect(page.getByTestId("ended-incident").filter({ hasText: incidentId })).toContainText(
    "reverted",
  );
  await shot(page, "overrides-after-revert");
  await untilFull(api, 20);
  const reverted = await burst(CUSTOMER, BURST);
  console.log(`after the revert: ${reverted.allowed} of ${BURST} admitted`);
  expect(reverted.allowed).toBeGreaterThanOrEqual(20);
  expect(reverted.allowed).toBeLessThan(raised.allowed);
  expect(reverted.rejected).toBeGreaterThan(0);
  expect(BASE_URL).toContain("127.0.0.1");
});

test("the customer page and the raise form at phone width", async ({ page, signIn }) => {
  await signIn("operator");
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`/customers/${CUSTOMER}`);
  await expect(page.getByRole("heading", { level: 1 })).toContainText("Initech");
  await expect(page.getByRole("link", { name: "Raise limit (incident)" })).toBeVisible();
  const pageOverflow = () =>
    page.evaluate(
      () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
    );
  // Nothing wider than the screen: wide tables scroll inside their panel.
  expect(await pageOverflow()).toBeLessThanOrEqual(0);
  // Each rule is a card on a phone: its name on one line or a few whole words, never a letter a
  // line, and its status and live bucket on screen without scrolling sideways.
  const rule = page.getByTestId("trace-rule").first();
  for (const label of ["Rule", "Status", "Live (peek)"]) {
    const cell = rule.locator(`td[data-label="${label}"]`);
    await expect(cell).toBeVisible();
    const box = await cell.boundingBox();
    expect(box, label).not.toBeNull();
    expect((box?.x ?? 0) + (box?.width ?? 0), `${label} ends on screen`).toBeLessThanOrEqual(390);
  }
  const ruleName = rule.locator('td[data-label="Rule"] code');
  const nameBox = await ruleName.boundingBox();
  const lineHeight = await ruleName.evaluate((element) =>
    Number.parseFloat(getComputedStyle(element).lineHeight || "20"),
  );
  expect((nameBox?.height ?? 0) / (Number.isFinite(lineHeight) ? lineHeight : 20)).toBeLessThan(3);
  await shot(page, "customer-390");
  await page.goto(`/incidents/new?customer=${CUSTOMER}`);
  await expect(page.getByLabel("Reason (required)")).toBeVisible();
  expect(await pageOverflow()).toBeLessThanOrEqual(0);
  await shot(page, "incident-new-390");
  await page.goto("/incidents/new");
  await expect(page.getByRole("heading", { name: "Which customer?" })).toBeVisible();
  await shot(page, "incident-new-picker-390");
  await page.goto("/overrides");
  await expect(page.getByRole("heading", { name: "Overrides", level: 1 })).toBeVisible();
  expect(await pageOverflow()).toBeLessThanOrEqual(0);
  await shot(page, "overrides-390");
  // The seed's incident (acme, ×3 on all endpoints).
  await page.goto("/incidents/inc-2025-06-02-acme");
  await expect(page.getByTestId("incident-headline")).toContainText("left");
  expect(await pageOverflow()).toBeLessThanOrEqual(0);
  await shot(page, "incident-390");
});

test("guardrails: the form's hint at the field, and the server's refusal at the same field", async ({
  page,
  signIn,
}) => {
  await signIn("operator");
  await page.goto("/incidents/new?customer=globex");
  await page.getByLabel("Scope").selectOption("reports");
  await expect(page.getByText("Now: 15/s, bursts of 300")).toBeVisible();
  await page.getByRole("radio", { name: "Absolute limit" }).check();
  // Burst ×2 is fine, but a rate ×60 is beyond the ×10 guardrail: said at the field, not sendable.
  await page.getByLabel("Burst (capacity)").fill("600");
  await page.getByLabel("Sustained rate (per second)").fill("900");
  await page.getByLabel("Reason (required)").fill("e2e: a raise beyond the guardrails");
  await expect(page.getByTestId("field-error")).toContainText(
    "a sustained rate of 900/s against 15/s in the limit it replaces would raise the limit 60x",
  );
  await expect(page.getByRole("button", { name: "Review and raise" })).toBeDisabled();
  await page.screenshot({ path: test.info().outputPath("incident-new-hint.png"), fullPage: true });
  // acme's seeded incident is active on all endpoints: a second one there would overlap.
  await page.goto("/incidents/new?customer=acme");
  await page.getByLabel("Scope").selectOption("account");
  await expect(page.getByTestId("field-error").first()).toContainText("already active here");
  await expect(page.getByRole("link", { name: /Open inc-2025-06-02-acme/ })).toBeVisible();
  await page.goto("/incidents/new?customer=globex");
  await page.getByLabel("Scope").selectOption("reports");
  await page.getByLabel("Reason (required)").fill("e2e: a raise beyond the guardrails");

  // The form loaded with a ×10 guardrail; an admin tightens it to ×4 meanwhile. The form's hint
  // cannot know, so ×5 goes to the server, which refuses it at the multiplier.
  await page.getByRole("radio", { name: "Multiplier" }).check();
  await page.getByLabel("Multiply by").fill("5");
  await expect(page.getByRole("button", { name: "Review and raise" })).toBeEnabled();
  const admin = await apiAs("admin");
  const setFactor = async (maxIncidentFactor: number) => {
    const current = (await (await admin.get("/api/v1/settings")).json()) as {
      settings: { version: number };
    };
    const response = await admin.patch("/api/v1/settings", {
      data: {
        expectedVersion: current.settings.version,
        guardrails: { maxIncidentFactor },
        reason: `e2e: guardrail ×${maxIncidentFactor} for the refusal test`,
      },
    });
    expect(response.status(), await response.text()).toBe(200);
  };
  await setFactor(4);
  try {
    await page.getByRole("button", { name: "Review and raise" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Raise limit" }).click();
    await expect(page.getByRole("dialog").getByRole("alert")).toContainText("factor");
    await page.getByRole("dialog").getByRole("button", { name: "Cancel" }).click();
    await expect(page.getByTestId("field-error")).toContainText(
      "the maximum raise is 4x (guardrails.maxIncidentFactor)",
    );
    await page.screenshot({
      path: test.info().outputPath("incident-new-refused.png"),
      fullPage: true,
    });
  } finally {
    await setFactor(10);
    await admin.dispose();
  }
  const incidents = await page.request.get("/api/v1/incidents?customerId=globex");
  expect(((await incidents.json()) as { incidents: unknown[] }).incidents).toHaveLength(0);
});
