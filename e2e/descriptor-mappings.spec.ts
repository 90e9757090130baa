/**
 * An admin edits the descriptor mappings in the console: a bad entry key is refused next to its
 * field, a good change is saved as a policy version and shown in force, and the API reads back
 * what the page saved. The mappings go back to the default at the end (other specs share the
 * database).
 */
import { expect, test } from "./fixtures";
import { apiAs } from "./support/shared-sessions";

test.afterAll(async () => {
  const api = await apiAs("admin");
  const current = await api.get("/api/v1/descriptor-mappings");
  const { descriptorMappings } = (await current.json()) as {
    descriptorMappings: { mappings: unknown[] | null; version: number };
  };
  if (descriptorMappings.mappings !== null) {
    const reset = await api.put("/api/v1/descriptor-mappings", {
      data: {
        expectedVersion: descriptorMappings.version,
        descriptorMappings: null,
        reason: "back to the default after the e2e",
      },
    });
    expect(reset.status(), await reset.text()).toBe(200);
  }
  await api.dispose();
});

test("an admin maps an edge proxy's API key entry in the console; a bad key is refused by field", async ({
  page,
  signIn,
}) => {
  await signIn("admin");
  await page.goto("/descriptor-mappings");
  await expect(page.getByRole("heading", { name: "Descriptor mappings", level: 1 })).toBeVisible();
  await expect(page.getByTestId("mappings-default")).toBeVisible();
  await expect(page.getByTestId("mapping-*")).toContainText("remote_address");

  const row = page.getByTestId("mapping-row-0");
  await row.getByLabel("Domain").fill("edge");
  await row.getByLabel("Customer entry").fill("api key");
  await row.getByLabel("A descriptor's own limit").selectOption("apply");
  await page.getByLabel("Reason").fill("the edge proxy sends x-api-key");
  await page.getByRole("button", { name: "Save the mappings" }).click();
  await expect(row.getByLabel("Customer entry")).toHaveAttribute("aria-invalid", "true");
  await expect(row).toContainText("customer must be printable ASCII without spaces");

  await row.getByLabel("Customer entry").fill("x-api-key");
  await page.getByRole("button", { name: "Save the mappings" }).click();
  await expect(page.getByTestId("mappings-saved")).toContainText("Saved as policy version");
  const inForce = page.getByTestId("mapping-edge");
  await expect(inForce).toContainText("x-api-key");
  await expect(inForce).toContainText("applied");
  await expect(page.getByTestId("mapping-*")).toHaveCount(0);

  const api = await apiAs("viewer");
  const read = await api.get("/api/v1/descriptor-mappings");
  const { descriptorMappings } = (await read.json()) as {
    descriptorMappings: { mappings: { domain: string; customer: string; limitOverride: string }[] };
  };
  expect(descriptorMappings.mappings).toEqual([
    expect.objectContaining({ domain: "edge", customer: "x-api-key", limitOverride: "apply" }),
  ]);
  await api.dispose();
});
