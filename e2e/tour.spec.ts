/**
 * Every console page, as an admin, at a laptop width and at a phone width: each renders its
 * heading without an error state, nothing spills sideways out of the phone's screen, and a
 * screenshot of each lands in test-results/e2e/screenshots/<page>-<width>.png.
 *
 * Runs after the flow specs (files run in name order, one worker), so incidents and candidates
 * usually exist; where none does, the tour makes its own through the API and cleans up after.
 */
import path from "node:path";
import type { APIRequestContext, APIResponse, Page } from "@playwright/test";
import { expect, test } from "./fixtures";
import { BASE_URL, GATEWAY_URLS } from "./run-env";

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

  const seenOnly = await seenOnlyCustomer(request);

  const stops: TourStop[] = [
    { name: "overview", path: "/" },
    { name: "policies", path: "/policies" },
    { name: "policy-tier", path: `/policies/tiers/${encodeURIComponent(tier.name)}` },
    {
      name: "policy-endpoint-class",
      path: `/policies/endpoint-classes/${encodeURIComponent(endpointClass.name)}`,
    },
    { name: "policy-settings", path: "/policies/settings" },
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
    { name: "dry-run", path: "/dry-run" },
    { name: "dry-run-candidate", path: `/dry-run/${encodeURIComponent(candidate.id)}` },
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
  test.setTimeout(120_000);
  await signIn("admin");
  const { stops, cleanUp } = await tourStops(page.request);
  try {
    for (const viewport of VIEWPORTS) {
      await page.setViewportSize({ width: viewport.width, height: viewport.height });
      for (const stop of stops) await visit(page, stop, viewport);
    }
  } finally {
    await cleanUp();
  }
  const missing = await page.goto("/no-such-page");
  expect(missing?.status()).toBe(404);
  await expect(page.getByRole("heading", { name: "Not found", level: 1 })).toBeVisible();
  await page.screenshot({ path: path.join(SCREENSHOTS, "not-found-phone.png") });
  await page.context().clearCookies();
  await page.goto("/sign-in");
  for (const viewport of VIEWPORTS) {
    await page.setViewportSize({ width: viewport.width, height: viewport.height });
    await page.screenshot({ path: path.join(SCREENSHOTS, `sign-in-${viewport.name}.png`) });
  }
});
