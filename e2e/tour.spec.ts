/**
 * Every console page, as an admin, at a laptop width and at a phone width: each renders its
 * heading without an error state, axe-core finds no serious or critical violation, no table
 * header is narrower than its longest word (which would wrap it mid-word, "CUSTOM ER"), nothing
 * spills sideways out of the phone's screen, and a screenshot of each lands in
 * test-results/e2e/screenshots/<page>-<width>.png.
 *
 * Runs after the flow specs (files run in name order, one worker), so incidents and candidates
 * usually exist; where none does, the tour makes its own through the API and cleans up after.
 */
import path from "node:path";
import type { APIRequestContext, APIResponse, Page } from "@playwright/test";
import { expect, test } from "./fixtures";
import { BASE_URL, GATEWAY_URLS } from "./run-env";
import { seriousViolations } from "./support/axe";

const SCREENSHOTS = path.resolve(import.meta.dirname, "..", "test-results", "e2e", "screenshots");
const VIEWPORTS = [
  { name: "laptop", width: 1280, height: 800 },
  { name: "phone", width: 390, height: 844 },
] as const;
const origin = { origin: BASE_URL };

interface TourStop {
  readonly name: string;
  readonly path: string;
}

async function firstOf<T>(request: APIRequestContext, url: string, key: string): Promise<T[]> {
  const response = await request.get(url);
  expect(response.status(), await response.text()).toBe(200);
  return ((await response.json()) as Record<string, T[]>)[key] ?? [];
}

async function tourStops(request: APIRequestContext): Promise<{
  stops: TourStop[];
  cleanUp: () => Promise<void>;
}> {
  const cleanups: (() => Promise<APIResponse>)[] = [];
  const [customer] = await firstOf<{ id: string }>(
    request,
    "/api/v1/customers?limit=1",
    "customers",
  );
  const [tier] = await firstOf<{ name: string }>(request, "/api/v1/tiers", "tiers");
  const [endpointClass] = await firstOf<{ name: string }>(
    request,
    "/api/v1/endpoint-classes",
    "endpointClasses",
  );
  if (customer === undefined || tier === undefined || endpointClass === undefined) {
    throw new Error("the seeded policy has no customer, tier or endpoint class to visit");
  }

  let [incident] = await firstOf<{ id: string }>(request, "/api/v1/incidents", "incidents");
  if (incident === undefined) {
    const raised = await request.post("/api/v1/incidents", {
      headers: origin,
      data: {
        customerId: customer.id,
        endpointClass: null,
        factor: 2,
        durationMs: 15 * 60_000,
        reason: "e2e tour: an incident page to look at",
      },
    });
    expect(raised.status(), await raised.text()).toBe(201);
    const created = ((await raised.json()) as { incident: { id: string; version: number } })
      .incident;
    incident = created;
    cleanups.push(() =>
      request.post(`/api/v1/incidents/${created.id}/revert`, {
        headers: origin,
        data: { expectedVersion: created.version, reason: "e2e tour: done looking" },
      }),
    );
  }

  let [candidate] = await firstOf<{ id: string }>(request, "/api/v1/candidates", "candidates");
  if (candidate === undefined) {
    const made = await request.post("/api/v1/candidates", {
      headers: origin,
      data: {
        id: "tour-candidate",
        target: `tier:${tier.name}`,
        limit: { algorithm: "token-bucket", capacity: 10, refillPerSec: 1 },
        reason: "e2e tour: a candidate page to look at",
      },
    });
    expect(made.status(), await made.text()).toBe(201);
    const created = ((await made.json()) as { candidate: { id: string; version: number } })
      .candidate;
    candidate = created;
    cleanups.push(() =>
      request.post(`/api/v1/candidates/${created.id}/discard`, {
        headers: origin,
        data: { expectedVersion: created.version, reason: "e2e tour: done looking" },
      }),
    );
  }

  // A change request to look at, withdrawn afterwards: asking needs no approvals to be on.
  const settings = await request.get("/api/v1/settings");
  expect(settings.status(), await settings.text()).toBe(200);
  const { ceilings, version: settingsVersion } = (
    (await settings.json()) as {
      settings: { ceilings: { perAddress: Record<string, unknown> }; version: number };
    }
  ).settings;
  const asked = await request.post("/api/v1/change-requests", {
    headers: origin,
    data: {
      change: {
        kind: "settings.update",
        expectedVersion: settingsVersion,
        ceilings: { perAddress: ceilings.perAddress },
      },
      reason: "e2e tour: a change request page to look at",
    },
  });
  expect(asked.status(), await asked.text()).toBe(201);
  const changeRequest = ((await asked.json()) as { changeRequest: { id: string; version: number } })
    .changeRequest;
  cleanups.push(() =>
    request.post(`/api/v1/change-requests/${changeRequest.id}/withdraw`, {
      headers: origin,
      data: { expectedVersion: changeRequest.version, reason: "e2e tour: done looking" },
    }),
  );

  const seenOnly = await seenOnlyCustomer(request);

  // A raised outbound budget: its banner, its row in the list and on the overrides page.
  const budgetName = `tour-quota-${Date.now().toString(36)}`;
  const budget = await request.post("/api/v1/outbound-budgets", {
    headers: origin,
    data: {
      name: budgetName,
      limit: { algorithm: "token-bucket", capacity: 10, refillPerSec: 10 },
      concurrency: { max: 4 },
      reason: "e2e tour: a budget to look at",
    },
  });
  expect(budget.status(), await budget.text()).toBe(201);
  const raised = await request.post(`/api/v1/outbound-budgets/${budgetName}/raise`, {
    headers: origin,
    data: { concurrencyMax: 8, durationMinutes: 60, reason: "e2e tour: the provider's quota day" },
  });
  expect(raised.status(), await raised.text()).toBe(200);
  const raisedVersion = ((await raised.json()) as { budget: { version: number } }).budget.version;
  cleanups.push(() =>
    request.delete(`/api/v1/outbound-budgets/${budgetName}`, {
      headers: origin,
      data: { expectedVersion: raisedVersion, reason: "e2e tour: done looking" },
    }),
  );

  const stops: TourStop[] = [
    { name: "overview", path: "/" },
    { name: "policies", path: "/policies" },
    { name: "policy-tier", path: `/policies/tiers/${encodeURIComponent(tier.name)}` },
    {
      name: "policy-endpoint-class",
      path: `/policies/endpoint-classes/${encodeURIComponent(endpointClass.name)}`,
    },
    { name: "policy-settings", path: "/policies/settings" },
    { name: "policy-safe-changes", path: "/policies/safe-changes" },
    { name: "policy-tier-new", path: "/policies/tiers/new" },
    { name: "policy-endpoint-class-new", path: "/policies/endpoint-classes/new" },
    { name: "customers", path: "/customers" },
    { name: "customer", path: `/customers/${encodeURIComponent(customer.id)}` },
    { name: "customer-seen-only", path: `/customers/${encodeURIComponent(seenOnly)}` },
    { name: "incident-new", path: `/incidents/new?customer=${encodeURIComponent(customer.id)}` },
    { name: "incidents", path: "/incidents" },
    { name: "incident", path: `/incidents/${encodeURIComponent(incident.id)}` },
    { name: "overrides", path: "/overrides" },
    { name: "audit", path: "/audit" },
    { name: "audit-webhook", path: "/audit/webhook" },
    { name: "change-requests", path: "/change-requests" },
    { name: "change-request", path: `/change-requests/${changeRequest.id}` },
    { name: "dry-run", path: "/dry-run" },
    { name: "dry-run-candidate", path: `/dry-run/${encodeURIComponent(candidate.id)}` },
    { name: "descriptor-rules", path: "/descriptor-rules" },
    { name: "outbound-budgets", path: "/outbound-budgets" },
    { name: "outbound-budget-raised", path: `/outbound-budgets/${budgetName}` },
    { name: "status", path: "/status" },
  ];
  return {
    stops,
    cleanUp: async () => {
      for (const cleanup of cleanups) {
        const response = await cleanup();
        expect(response.status(), await response.text()).toBe(200);
      }
    },
  };
}

/**
 * Visible column headers narrower than their longest word: such a header wraps mid-word. Each
 * word is measured in the header's own font, case and letter spacing.
 */
async function headersNarrowerThanAWord(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const offenders: string[] = [];
    const probe = document.createElement("span");
    probe.style.position = "absolute";
    probe.style.visibility = "hidden";
    probe.style.whiteSpace = "nowrap";
    document.body.append(probe);
    for (const header of document.querySelectorAll<HTMLElement>("thead th, th[scope=col]")) {
      const box = header.getBoundingClientRect();
      // Hidden, or visually hidden (a phone's stacked table keeps its header for screen readers).
      if (box.width <= 1 || box.height <= 1 || header.checkVisibility() === false) continue;
      const style = getComputedStyle(header);
      const contentWidth =
        header.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
      probe.style.font = style.font;
      probe.style.textTransform = style.textTransform;
      probe.style.letterSpacing = style.letterSpacing;
      // Words a person sees: text in a visually hidden span (a label for screen readers) is
      // clipped to a pixel and takes no room.
      const words: string[] = [];
      const walker = document.createTreeWalker(header, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
        const parent = node.parentElement;
        if (parent === null || parent.getBoundingClientRect().width <= 1) continue;
        words.push(...(node.textContent ?? "").split(/\s+/).filter(Boolean));
      }
      for (const word of words) {
        probe.textContent = word;
        const wordWidth = probe.getBoundingClientRect().width;
        if (wordWidth > contentWidth + 0.5) {
          offenders.push(
            `"${word}" needs ${wordWidth.toFixed(1)}px, its header has ${contentWidth.toFixed(1)}px`,
          );
        }
      }
    }
    probe.remove();
    return offenders;
  });
}

/** A customer only the gateways know: one request through a gateway, until it is reported. */
async function seenOnlyCustomer(request: APIRequestContext): Promise<string> {
  const id = "tour-seen-only";
  await expect
    .poll(
      async () => {
        const sent = await fetch(`${GATEWAY_URLS[0]}/v1/things`, {
          headers: { "x-customer-id": id, "x-tier": "pro" },
        });
        await sent.arrayBuffer();
        return (await request.get(`/api/v1/seen-customers/${id}`)).status();
      },
      { timeout: 20_000, intervals: [500, 1_000] },
    )
    .toBe(200);
  return id;
}

async function visit(page: Page, stop: TourStop, viewport: (typeof VIEWPORTS)[number]) {
  const response = await page.goto(stop.path);
  expect(response?.status(), `${stop.path} answered`).toBe(200);
  await expect(page.getByRole("heading", { level: 1 }).first()).toBeVisible();
  await expect(page.locator(".error-state"), `${stop.path} shows an error`).toHaveCount(0);
  // Client components (charts, local times) have mounted before anything is measured.
  await page.waitForLoadState("networkidle");
  expect
    .soft(await seriousViolations(page), `axe on ${stop.path} at ${viewport.width} px`)
    .toEqual([]);
  expect
    .soft(
      await headersNarrowerThanAWord(page),
      `table headers on ${stop.path} at ${viewport.width} px`,
    )
    .toEqual([]);
  if (viewport.name === "phone") {
    // The elements that reach past the right edge of the screen, outermost first, named by tag and
    // class so a failure says where to look.
    const spill = await page.evaluate(() => {
      const width = document.documentElement.clientWidth;
      const offenders: string[] = [];
      for (const element of document.body.querySelectorAll("*")) {
        const box = element.getBoundingClientRect();
        if (box.width === 0 || box.right <= width + 1) continue;
        let clipped = false;
        for (let up = element.parentElement; up !== null; up = up.parentElement) {
          const overflowX = getComputedStyle(up).overflowX;
          if (overflowX === "auto" || overflowX === "scroll" || overflowX === "hidden") {
            clipped = true;
            break;
          }
        }
        if (!clipped) {
          offenders.push(
            `${element.tagName.toLowerCase()}.${element.className} (${Math.round(box.right - width)}px)`,
          );
        }
      }
      return offenders.slice(0, 5);
    });
    expect.soft(spill, `${stop.path} spills past a phone's screen`).toEqual([]);
  }
  await page.screenshot({
    path: path.join(SCREENSHOTS, `${stop.name}-${viewport.name}.png`),
    fullPage: true,
  });
}

test("every page renders at laptop and phone width, with a screenshot of each", async ({
  page,
  signIn,
}) => {
  test.setTimeout(480_000);
  await signIn("admin");
  // Nothing a page loads is missing (a 404 favicon logged an error on every page).
  const missingResources: string[] = [];
  page.on("response", (response) => {
    if (response.status() === 404 && response.request().resourceType() !== "document") {
      missingResources.push(response.url());
    }
  });
  const favicon = await page.request.get("/favicon.ico");
  expect(favicon.status()).toBe(200);
  expect(favicon.headers()["content-type"]).toMatch(/^image\//);
  const { stops, cleanUp } = await tourStops(page.request);
  try {
    for (const viewport of VIEWPORTS) {
      await page.setViewportSize({ width: viewport.width, height: viewport.height });
      for (const stop of stops) await visit(page, stop, viewport);
    }
  } finally {
    await cleanUp();
  }
  expect(missingResources, "resources that answered 404").toEqual([]);
  const missing = await page.goto("/no-such-page");
  expect(missing?.status()).toBe(404);
  await expect(page.getByRole("heading", { name: "Not found", level: 1 })).toBeVisible();
  await page.screenshot({ path: path.join(SCREENSHOTS, "not-found-phone.png") });
  await page.context().clearCookies();
  await page.goto("/sign-in");
  for (const viewport of VIEWPORTS) {
    await page.setViewportSize({ width: viewport.width, height: viewport.height });
    expect
      .soft(await seriousViolations(page), `axe on /sign-in at ${viewport.width} px`)
      .toEqual([]);
    await page.screenshot({ path: path.join(SCREENSHOTS, `sign-in-${viewport.name}.png`) });
  }
});
