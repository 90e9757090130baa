/**
 * Watching and reviewing: audited changes made through the API by two people (an admin and an
 * operator, each with their own session) are found in the audit log by customer and by actor,
 * exactly and with their before/after values; and the overview draws the fleet and the charts.
 */
import type { APIRequestContext, Page } from "@playwright/test";
import pg from "pg";
import { expect, test } from "./fixtures";
import { E2E_DATABASE_URL, type E2ERole, GATEWAY_URLS } from "./run-env";
import { apiAs } from "./support/shared-sessions";

const run = Date.now().toString(36);
const tokenBucket = (capacity: number, refillPerSec: number) => ({
  algorithm: "token-bucket",
  capacity,
  refillPerSec,
});

/** An API client with `role`'s session (shared by the run), and that operator's id. */
async function apiWithId(role: E2ERole): Promise<{ api: APIRequestContext; operatorId: string }> {
  const api = await apiAs(role);
  const me = await api.get("/api/v1/auth/me");
  expect(me.status()).toBe(200);
  const body: { operator: { id: string } } = await me.json();
  return { api, operatorId: body.operator.id };
}

async function send(
  api: APIRequestContext,
  method: "POST" | "PATCH",
  path: string,
  data: Record<string, unknown>,
): Promise<void> {
  const response = await api.fetch(path, { method, data });
  expect(response.ok(), `${method} ${path}: ${await response.text()}`).toBe(true);
}

/**
 * Nothing wider than the viewport: a phone scrolls down, never sideways. The charts follow a
 * viewport change through a ResizeObserver, a frame or more after it, so the check waits for the
 * layout to settle; a chart that stays wider still fails, naming what sticks out.
 */
async function expectNoSidewaysScroll(page: Page): Promise<void> {
  await expect(async () => {
    const widths = await page.evaluate(() => ({
      page: document.documentElement.scrollWidth,
      viewport: window.innerWidth,
      // What sticks out, so a failure names the element rather than only the width.
      wider: [...document.querySelectorAll("main *")]
        .filter((element) => element.getBoundingClientRect().right > window.innerWidth + 1)
        .filter((element) => element.closest(".table-scroll") === null)
        .slice(0, 5)
        .map((element) => `${element.tagName.toLowerCase()}.${element.getAttribute("class")}`),
    }));
    expect(widths.page, `wider than the viewport: ${widths.wider.join(", ")}`).toBeLessThanOrEqual(
      widths.viewport,
    );
  }).toPass({ timeout: 5_000 });
}

async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: test.info().outputPath(`${name}.png`), fullPage: true });
}

/** The audit entries on the page, in order: action, entity and actor name of each. */
async function shownEntries(page: Page): Promise<string[]> {
  const entries = page.getByTestId("audit-entry");
  const count = await entries.count();
  const shown: string[] = [];
  for (let index = 0; index < count; index++) {
    const entry = entries.nth(index);
    const title = ((await entry.getByRole("heading").textContent()) ?? "")
      .replace(/\s+/g, " ")
      .trim();
    const actor = ((await entry.getByTestId("audit-actor").textContent()) ?? "").trim();
    shown.push(`${title} by ${actor}`);
  }
  return shown;
}

test.describe("review: the audit log", () => {
  // The operator's own zone is not the server's: the time filter must be read in it.
  test.use({ timezoneId: "America/New_York" });

  const first = `rev-a-${run}`;
  const second = `rev-b-${run}`;
  const tier = `rev-tier-${run}`;
  let startedAt = "";
  let operatorId = "";
  let adminId = "";

  test.beforeAll(async () => {
    const admin = await apiWithId("admin");
    const operator = await apiWithId("operator");
    operatorId = operator.operatorId;
    adminId = admin.operatorId;
    startedAt = new Date().toISOString();

    await send(admin.api, "POST", "/api/v1/customers", {
      id: first,
      displayName: "Review First",
      tier: "free",
      reason: "onboarding the first reviewed customer",
    });
    await send(admin.api, "POST", "/api/v1/customers", {
      id: second,
      displayName: "Review Second",
      tier: "pro",
      reason: "onboarding the second reviewed customer",
    });
    await send(operator.api, "POST", `/api/v1/customers/${first}/overrides`, {
      endpointClass: null,
      limit: tokenBucket(50, 5),
      reason: "contracted burst for the first customer",
    });
    await send(operator.api, "PATCH", `/api/v1/customers/${first}/overrides/account`, {
      expectedVersion: 1,
      limit: tokenBucket(80, 8),
      reason: "raised after the contract amendment",
    });
    await send(operator.api, "POST", `/api/v1/customers/${second}/overrides`, {
      endpointClass: "reports",
      limit: tokenBucket(120, 6),
      reason: "reports batch window",
    });
    await send(admin.api, "PATCH", `/api/v1/customers/${second}/overrides/endpoints/reports`, {
      expectedVersion: 1,
      limit: tokenBucket(150, 6),
      reason: "reports batch window, larger",
    });
    await send(admin.api, "POST", "/api/v1/tiers", {
      name: tier,
      displayName: "Review tier",
      limit: tokenBucket(30, 3),
      reason: "a tier for the review test",
    });
    await send(admin.api, "PATCH", `/api/v1/tiers/${tier}`, {
      expectedVersion: 1,
      limit: tokenBucket(45, 3),
      reason: "more burst for the review tier",
    });
    await Promise.all([admin.api.dispose(), operator.api.dispose()]);
  });

  test("filtered by customer: exactly that customer's changes, with before and after", async ({
    page,
    signIn,
  }) => {
    await signIn("viewer");
    await page.goto("/audit");
    await expect(page.getByRole("heading", { name: "Audit log", level: 1 })).toBeVisible();
    await screenshot(page, "audit");

    await page.getByLabel("Customer", { exact: true }).fill(first);
    await page.getByRole("button", { name: "Apply filters" }).click();
    await page.waitForURL((url) => url.searchParams.get("customerId") === first);
    // Only the filter that is set travels in the URL.
    expect(new URL(page.url()).search).toBe(`?customerId=${first}`);

    await expect(page.getByTestId("audit-entry")).toHaveCount(3);
    expect(await shownEntries(page)).toEqual([
      `override.update customer-override customer:${first} by Oscar Operator`,
      `override.create customer-override customer:${first} by Oscar Operator`,
      `customer.create customer ${first} by Ada Admin`,
    ]);
    const raised = page.getByTestId("audit-entry").first();
    await expect(raised.getByTestId("audit-reason")).toHaveText(
      "raised after the contract amendment",
    );
    // The list is compact: each diff opens on demand.
    await expect(raised.getByRole("row", { name: /limit\.capacity/ })).toHaveCount(0);
    await raised.getByText("Before and after").click();
    const capacity = raised.getByRole("row", { name: /limit\.capacity/ });
    await expect(capacity.getByRole("cell").nth(0)).toHaveText("50");
    await expect(capacity.getByRole("cell").nth(1)).toHaveText("80");
    const created = page.getByTestId("audit-entry").nth(2);
    await expect(created.getByTestId("audit-customer")).toHaveAttribute(
      "href",
      `/customers/${first}`,
    );
    await screenshot(page, "audit-by-customer");

    await page.setViewportSize({ width: 390, height: 844 });
    await expect(page.getByTestId("audit-entry")).toHaveCount(3);
    await expectNoSidewaysScroll(page);
    await screenshot(page, "audit-by-customer-phone");
  });

  test("filtered by actor since a moment: exactly that person's changes", async ({
    page,
    signIn,
  }) => {
    await signIn("viewer");
    // The range's start arrives as an instant in the link and is shown in the operator's zone.
    await page.goto(`/audit?from=${encodeURIComponent(startedAt)}`);
    const expectedLocal = new Intl.DateTimeFormat("sv-SE", {
      timeZone: "America/New_York",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
    })
      .format(new Date(startedAt))
      .replace(" ", "T");
    await expect(page.getByLabel(/^From/)).toHaveValue(expectedLocal);
    await screenshot(page, "audit-from-instant");

    await page.getByLabel("Actor", { exact: true }).selectOption(operatorId);
    await page.getByRole("button", { name: "Apply filters" }).click();
    await page.waitForURL((url) => url.searchParams.get("actorId") === operatorId);
    expect(new URL(page.url()).searchParams.get("from")).toBe(startedAt);

    await expect(page.getByTestId("audit-entry")).toHaveCount(3);
    expect(await shownEntries(page)).toEqual([
      `override.create customer-override customer:${second}/endpoint:reports by Oscar Operator`,
      `override.update customer-override customer:${first} by Oscar Operator`,
      `override.create customer-override customer:${first} by Oscar Operator`,
    ]);
    const created = page.getByTestId("audit-entry").first();
    await created.getByText("Before and after").click();
    await expect(created.getByRole("row", { name: /capacity/ }).first()).toContainText("120");
    await screenshot(page, "audit-by-operator");

    // The admin's changes in the same span: the other five.
    await page.goto(`/audit?from=${encodeURIComponent(startedAt)}`);
    await expect(page.getByLabel(/^From/)).toHaveValue(expectedLocal);
    await screenshot(page, "audit-from-instant-again");
    await page.getByLabel("Actor", { exact: true }).selectOption(adminId);
    await page.getByRole("button", { name: "Apply filters" }).click();
    await page.waitForURL((url) => url.searchParams.get("actorId") === adminId);
    await expect(page.getByTestId("audit-entry")).toHaveCount(5);
    expect(await shownEntries(page)).toEqual([
      `tier.update tier ${tier} by Ada Admin`,
      `tier.create tier ${tier} by Ada Admin`,
      `override.update customer-override customer:${second}/endpoint:reports by Ada Admin`,
      `customer.create customer ${second} by Ada Admin`,
      `customer.create customer ${first} by Ada Admin`,
    ]);
    const tierChange = page.getByTestId("audit-entry").first();
    await tierChange.getByText("Before and after").click();
    const capacity = tierChange.getByRole("row", { name: /limit\.capacity/ });
    await expect(capacity.getByRole("cell").nth(0)).toHaveText("30");
    await expect(capacity.getByRole("cell").nth(1)).toHaveText("45");
    await screenshot(page, "audit-by-admin");

    // The entity links to its own history.
    await tierChange.getByTestId("audit-entity").click();
    await page.waitForURL((url) => url.searchParams.get("entityId") === tier);
    expect(new URL(page.url()).searchParams.get("entityType")).toBe("tier");
    await expect(page.getByTestId("audit-entry")).toHaveCount(2);
    await screenshot(page, "audit-tier-history");

    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, "audit-tier-history-phone");
  });

  test("pages older and newer through a customer's long history, 25 at a time", async ({
    page,
    signIn,
  }) => {
    // 30 changes of one customer's display name: two pages.
    const customer = `rev-long-${run}`;
    const { api } = await apiWithId("operator");
    await send(api, "POST", "/api/v1/customers", {
      id: customer,
      displayName: "Long history 0",
      tier: "free",
      reason: "a customer with a long history",
    });
    for (let version = 1; version < 30; version++) {
      await send(api, "PATCH", `/api/v1/customers/${customer}`, {
        expectedVersion: version,
        displayName: `Long history ${version}`,
        reason: `rename ${version}`,
      });
    }
    await api.dispose();

    await signIn("viewer");
    await page.goto(`/audit?customerId=${customer}`);
    const reasons = page.getByTestId("audit-entry").getByTestId("audit-reason");
    await expect(reasons).toHaveCount(25);
    await expect(reasons.first()).toHaveText("rename 29");
    await expect(reasons.last()).toHaveText("rename 5");
    const pager = page.getByRole("navigation", { name: "Audit log pages", exact: true });
    await expect(pager.getByText("← Newer")).toHaveAttribute("aria-disabled", "true");
    await screenshot(page, "audit-newest-page");

    await pager.getByRole("link", { name: "Older →" }).click();
    await page.waitForURL((url) => url.searchParams.has("after"));
    expect(new URL(page.url()).searchParams.get("customerId")).toBe(customer);
    await expect(reasons).toHaveCount(5);
    await expect(reasons.first()).toHaveText("rename 4");
    await expect(reasons.last()).toHaveText("a customer with a long history");
    await expect(pager.getByText("Older →")).toHaveAttribute("aria-disabled", "true");
    await screenshot(page, "audit-older-page");

    await pager.getByRole("link", { name: "← Newer" }).click();
    await page.waitForURL((url) => url.searchParams.has("before"));
    await expect(reasons).toHaveCount(25);
    await expect(reasons.first()).toHaveText("rename 29");
    await expect(reasons.last()).toHaveText("rename 5");
    await screenshot(page, "audit-back-to-newer-page");
  });

  test("no match: says so and offers to clear the filters", async ({ page, signIn }) => {
    await signIn("viewer");
    await page.goto(`/audit?customerId=nobody-${run}`);
    await expect(page.getByText("No entries match these filters")).toBeVisible();
    await screenshot(page, "audit-empty");
    await page.getByRole("link", { name: "Clear filters" }).first().click();
    await page.waitForURL((url) => url.search === "");
    await expect(page.getByTestId("audit-entry").first()).toBeVisible();
    await screenshot(page, "audit-cleared");

    // A broken page link or a filter that is not one: said next to its name, never a crash.
    await page.goto("/audit?after=not-a-cursor&action=tier.explode");
    const problem = page.getByRole("alert").filter({ hasText: "These filters" });
    await expect(problem).toContainText("These filters cannot be used");
    await expect(problem).toContainText("action must be one of the audit actions");
    await screenshot(page, "audit-bad-filters");
    await page.goto("/audit?after=not-a-cursor");
    await expect(page.locator(".error-state")).toContainText(
      "after is not one this service returned; start from the first page",
    );
    await screenshot(page, "audit-broken-page-link");
  });
});

/**
 * An hour of history in which a made-up scope rejected 1% (100 requests a minute), then 60% over
 * the three minutes before this one (200 a minute): a sharp rise against its own baseline.
 * Written as rolled-up minutes, as the worker would have, because a real hour of traffic does not
 * fit in a test.
 *
 * The two minutes between the rise and the baseline hold nothing, so the page may read it up to
 * two minutes later: the alert's windows end at the start of the page's minute (recent: the 5
 * minutes before it; baseline: the hour before those), and a minute boundary passing after the
 * seed moves both windows by a minute. Without the gap, one boundary put a 60% minute into the
 * baseline ("2% → 60%"). The console also drops stored rows of the minutes Redis still holds
 * live counts for (the demo gateways' traffic), so the recent window may see fewer of the three.
 */
async function seedRejectionRise(scope: string): Promise<void> {
  const client = new pg.Client({ connectionString: E2E_DATABASE_URL });
  await client.connect();
  try {
    await client.query(
      `INSERT INTO "MetricMinute" ("scope", "minute", "allowed", "rejected")
       SELECT $1, date_trunc('minute', now()) - m * interval '1 minute',
              CASE WHEN m <= 3 THEN 80 ELSE 99 END, CASE WHEN m <= 3 THEN 120 ELSE 1 END
       FROM generate_series(1, 67) AS m
       WHERE m NOT IN (4, 5)`,
      [scope],
    );
  } finally {
    await client.end();
  }
}

test.describe("review: the overview", () => {
  test("draws the rejection rate per scope with changes marked, the fleet, and the alerts", async ({
    page,
    signIn,
  }) => {
    // A free customer searching faster than its limit: some admitted, some rejected.
    const gateway = GATEWAY_URLS[0];
    if (gateway === undefined) throw new Error("the run has no demo gateway");
    const statuses = await Promise.all(
      Array.from({ length: 40 }, () =>
        fetch(`${gateway}/v1/search`, { headers: { "x-customer-id": "initech" } }).then(
          (response) => response.status,
        ),
      ),
    );
    expect(statuses).toContain(200);
    expect(statuses).toContain(429);

    const risingScope = `tier:rev-alert-${run}`;
    await seedRejectionRise(risingScope);

    await signIn("operator");
    await page.goto("/?range=15m");
    await expect(page.getByRole("heading", { name: "Overview", level: 1 })).toBeVisible();
    await expect(page.getByRole("link", { name: "Last 15 minutes" })).toHaveAttribute(
      "aria-current",
      "page",
    );
    // An operator may raise an incident override.
    await expect(page.getByRole("link", { name: "Raise limit" })).toHaveAttribute(
      "href",
      "/incidents/new",
    );

    // Both demo gateways heartbeat and run the published version.
    const fleet = page.getByTestId("overview-fleet");
    await expect(fleet.getByTestId("enforcer-row")).toHaveCount(2);
    await expect(fleet.getByTestId("enforcer-row").first()).toContainText(/current|behind/);

    // The enforcers flush counts every second; the chart reads the current minute live.
    await expect(async () => {
      await page.reload();
      await expect(page.getByRole("list", { name: "Scopes" })).toBeVisible({ timeout: 1_000 });
    }).toPass({ timeout: 20_000 });
    const chart = page.getByTestId("rejection-chart");
    await expect(chart.getByRole("list", { name: "Scopes" })).toContainText("tier:free");
    // The rise is an alert at the top, in words and numbers.
    const alerts = page.getByTestId("overview-alerts").getByRole("list", { name: "Alerts" });
    const rise = alerts.getByRole("listitem").filter({ hasText: risingScope });
    await expect(rise).toContainText("rejections up");
    await expect(rise).toContainText("1% → 60%");
    await screenshot(page, "overview");

    await page.setViewportSize({ width: 390, height: 844 });
    await expect(page.getByTestId("enforcer-row").first()).toBeVisible();
    await expectNoSidewaysScroll(page);
    await screenshot(page, "overview-phone");
    await page.setViewportSize({ width: 1280, height: 720 });

    // The hour: the audited changes made through the API are marked, each linking to its entry.
    await page.getByRole("link", { name: "Last hour" }).click();
    await page.waitForURL((url) => url.search === "?range=1h");
    const markers = page.getByRole("list", { name: "Changes in this range" });
    await expect(markers.getByRole("link").first()).toBeVisible();
    const href = await markers.getByRole("link").first().getAttribute("href");
    expect(href).toMatch(/^\/audit\?entry=\d+$/);
    await screenshot(page, "overview-hour");
    await page.goto(href ?? "/audit");
    await expect(page.getByTestId("audit-entry")).toHaveCount(1);
    // An entry's own page opens its diff.
    await expect(page.getByTestId("audit-diff")).toHaveAttribute("open", "");
    await screenshot(page, "audit-entry");

    await page.goto("/?range=1d");
    await expect(page.getByRole("link", { name: "Last day" })).toHaveAttribute(
      "aria-current",
      "page",
    );
    await expect(page.getByTestId("rejection-chart")).toBeVisible();
    await screenshot(page, "overview-day");
  });

  test("a viewer is not offered to raise a limit", async ({ page, signIn }) => {
    await signIn("viewer");
    await page.goto("/");
    await expect(page.getByTestId("overview-fleet")).toBeVisible();
    await expect(page.getByRole("link", { name: "Raise limit" })).toHaveCount(0);
    await screenshot(page, "overview-viewer");
  });
});
