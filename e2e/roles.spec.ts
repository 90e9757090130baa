/**
 * Roles, from the outside: a viewer sees every page and is offered no change, and every mutating
 * API refuses the viewer's session with 403 and changes nothing (checked by reading back); an
 * operator is refused the admin-only actions (a tier edit, a candidate promotion).
 */
import type { APIRequestContext } from "@playwright/test";
import { expect, test } from "./fixtures";
import { apiAs } from "./support/shared-sessions";

const CUSTOMER = "globex";
/**
 * Controls that change something, by the verb their label starts with; none may be offered to a
 * viewer. Anchored, so a link named after an entity ("tier-edit-test", "customer.create") is not
 * mistaken for a control.
 */
const MUTATING =
  /^\s*(raise|extend|revert|edit|promote|delete|discard|create|add|save|import|new|disable|enable|reset|revoke)\b/i;
const PAGES = [
  "/",
  "/policies",
  "/customers",
  `/customers/${CUSTOMER}`,
  "/overrides",
  "/audit",
  "/dry-run",
  "/descriptor-rules",
  "/descriptor-mappings",
  "/status",
  "/incidents/new",
];

async function json<T>(response: Awaited<ReturnType<APIRequestContext["get"]>>): Promise<T> {
  expect(response.status(), await response.text()).toBe(200);
  return (await response.json()) as T;
}

test("a viewer sees every page and is offered no change; the API refuses every change with 403", async ({
  page,
  signIn,
}) => {
  test.setTimeout(90_000);
  // An incident to look at and to try to extend and revert, raised by an operator.
  const operator = await apiAs("operator");
  const raised = await operator.post("/api/v1/incidents", {
    data: {
      customerId: CUSTOMER,
      endpointClass: null,
      factor: 2,
      durationMs: 30 * 60_000,
      reason: "e2e roles: an incident the viewer may look at but not touch",
    },
  });
  expect(raised.status(), await raised.text()).toBe(201);
  const incident = ((await raised.json()) as { incident: { id: string; version: number } })
    .incident;

  await signIn("viewer");
  for (const path of [...PAGES, `/incidents/${incident.id}`]) {
    await page.goto(path);
    await expect(page.getByRole("heading", { level: 1 }).first()).toBeVisible();
    await expect(page.getByRole("main").getByRole("button", { name: MUTATING })).toHaveCount(0);
    await expect(page.getByRole("main").getByRole("link", { name: MUTATING })).toHaveCount(0);
    const name = path === "/" ? "overview" : path.slice(1).replace(/[/?=]/g, "-");
    await page.screenshot({ path: test.info().outputPath(`viewer-${name}.png`), fullPage: true });
  }
  // The raise page says why instead of offering the form.
  await page.goto(`/incidents/new?customer=${CUSTOMER}`);
  await expect(page.getByText("Your role (viewer) may not raise limits")).toBeVisible();
  // The incident page shows it with its countdown, without extend or revert.
  await page.goto(`/incidents/${incident.id}`);
  await expect(page.getByTestId("incident-headline")).toContainText("left");
  await expect(page.getByRole("heading", { name: "Extend or revert" })).toHaveCount(0);

  // What there is before the viewer tries anything.
  const viewer = await apiAs("viewer");
  const read = async () => ({
    incidents: (
      await json<{ incidents: { id: string; expiresAt: string; version: number }[] }>(
        await viewer.get(`/api/v1/incidents?customerId=${CUSTOMER}&status=all`),
      )
    ).incidents,
    overrides: await json<unknown>(await viewer.get(`/api/v1/customers/${CUSTOMER}/overrides`)),
    tier: (
      await json<{ tier: { version: number; limit: unknown } }>(
        await viewer.get("/api/v1/tiers/free"),
      )
    ).tier,
    candidates: await json<{ candidates: { id: string; version: number }[] }>(
      await viewer.get("/api/v1/candidates"),
    ),
  });
  const before = await read();
  const freeHalved = before.candidates.candidates.find((c) => c.id === "free-halved");
  expect(freeHalved).toBeDefined();
  const reason = "e2e roles: a viewer trying to change something";
  const attempts: { label: string; send: () => ReturnType<APIRequestContext["post"]> }[] = [
    {
      label: "POST incidents",
      send: () =>
        viewer.post("/api/v1/incidents", {
          data: {
            customerId: CUSTOMER,
            endpointClass: null,
            factor: 2,
            durationMs: 900_000,
            reason,
          },
        }),
    },
    {
      label: "extend",
      send: () =>
        viewer.post(`/api/v1/incidents/${incident.id}/extend`, {
          data: { expectedVersion: incident.version, durationMs: 60 * 60_000, reason },
        }),
    },
    {
      label: "revert",
      send: () =>
        viewer.post(`/api/v1/incidents/${incident.id}/revert`, {
          data: { expectedVersion: incident.version, reason },
        }),
    },
    {
      label: "customer override",
      send: () =>
        viewer.post(`/api/v1/customers/${CUSTOMER}/overrides`, {
          data: {
            endpointClass: "search",
            limit: { algorithm: "token-bucket", capacity: 400, refillPerSec: 40 },
            reason,
          },
        }),
    },
    {
      label: "tier PATCH",
      send: () =>
        viewer.patch("/api/v1/tiers/free", {
          data: {
            expectedVersion: before.tier.version,
            limit: { algorithm: "token-bucket", capacity: 40, refillPerSec: 20 },
            reason,
          },
        }),
    },
    {
      label: "candidate create",
      send: () =>
        viewer.post("/api/v1/candidates", {
          data: {
            target: "tier:pro",
            limit: { algorithm: "token-bucket", capacity: 100, refillPerSec: 50 },
            reason,
          },
        }),
    },
    {
      label: "candidate promote",
      send: () =>
        viewer.post("/api/v1/candidates/free-halved/promote", {
          data: { expectedVersion: freeHalved?.version ?? 1, reason },
        }),
    },
  ];
  for (const attempt of attempts) {
    const response = await attempt.send();
    expect(response.status(), `${attempt.label}: ${await response.text()}`).toBe(403);
  }
  expect(await read()).toEqual(before);

  // An operator may raise incidents but not edit a tier or promote a candidate.
  const operatorTier = await operator.patch("/api/v1/tiers/free", {
    data: {
      expectedVersion: before.tier.version,
      limit: { algorithm: "token-bucket", capacity: 40, refillPerSec: 20 },
      reason: "e2e roles: an operator trying an admin-only change",
    },
  });
  expect(operatorTier.status(), await operatorTier.text()).toBe(403);
  const operatorPromote = await operator.post("/api/v1/candidates/free-halved/promote", {
    data: { expectedVersion: freeHalved?.version ?? 1, reason: "e2e roles: operator promote" },
  });
  expect(operatorPromote.status(), await operatorPromote.text()).toBe(403);
  expect(await read()).toEqual(before);

  // Clean up: the operator reverts the incident it raised.
  const reverted = await operator.post(`/api/v1/incidents/${incident.id}/revert`, {
    data: { expectedVersion: incident.version, reason: "e2e roles: done" },
  });
  expect(reverted.status(), await reverted.text()).toBe(200);
  await operator.dispose();
  await viewer.dispose();
});

test("an operator is offered raise, extend and revert", async ({ page, signIn }) => {
  await signIn("operator");
  await page.goto(`/customers/${CUSTOMER}`);
  await expect(page.getByRole("link", { name: "Raise limit (incident)" })).toBeVisible();
  // The pattern the viewer test relies on does find controls when they are offered.
  expect(
    await page.getByRole("main").getByRole("link", { name: MUTATING }).count(),
  ).toBeGreaterThan(0);
  await page.goto("/incidents/inc-2025-06-02-acme");
  await expect(page.getByRole("main").getByRole("button", { name: MUTATING })).toHaveCount(2);
  await page.goto("/overrides");
  await expect(page.getByRole("link", { name: "Raise a limit (incident)" })).toBeVisible();
});
