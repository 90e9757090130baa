import { expect, test } from "./fixtures";
import { NO_REDIS_BASE_URL } from "./run-env";

test.describe("status page", () => {
  test("shows Postgres and Redis connected, the applied migrations and the build", async ({
    page,
  }) => {
    await page.goto("/status");
    await expect(page.getByRole("heading", { name: "Status", level: 1 })).toBeVisible();
    await expect(page.getByTestId("postgres-state")).toHaveText(/Connected/);
    await expect(page.getByTestId("redis-state")).toHaveText(/Connected/);
    await expect(page.getByTestId("migration-row").first()).toContainText("_init");
    await expect(page.getByTestId("build-version")).toHaveText(/\d+\.\d+\.\d+/);
    await page.screenshot({ path: test.info().outputPath("status-healthy.png"), fullPage: true });
  });

  test.describe("in the viewer's time zone", () => {
    test.use({ timezoneId: "Asia/Kolkata", locale: "en-US" });
    test("shows the migrations' and the check's times in local time, the instant on hover", async ({
      page,
    }) => {
      await page.goto("/status");
      const applied = page.getByTestId("migration-row").first().locator("time");
      // Rendered on the client in the viewer's zone (India is UTC+5:30), not the server's UTC.
      await expect(applied).toContainText("GMT+5:30");
      await expect(applied).not.toContainText("UTC");
      const iso = await applied.getAttribute("datetime");
      expect(iso).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      // Formatted by the browser's own Intl, as a person in Kolkata would read it.
      const local = await page.evaluate(
        (at) =>
          new Intl.DateTimeFormat("en-US", {
            dateStyle: "medium",
            timeStyle: "long",
            hourCycle: "h23",
          }).format(Date.parse(at)),
        iso ?? "",
      );
      await expect(applied).toHaveText(local);
      await expect(page.getByTestId("status-checked-at")).toContainText("GMT+5:30");
    });
  });

  test("shows Redis down when the server points at a port with no Redis", async ({ page }) => {
    await page.goto(`${NO_REDIS_BASE_URL}/status`);
    await expect(page.getByTestId("redis-state")).toHaveText(/Unreachable/);
    await expect(page.getByTestId("service-redis")).toContainText("connection refused");
    // Postgres is unaffected and still reported as connected.
    await expect(page.getByTestId("postgres-state")).toHaveText(/Connected/);
    await page.screenshot({
      path: test.info().outputPath("status-redis-down.png"),
      fullPage: true,
    });
  });

  test("health endpoint answers 503 and names Redis when it is down", async ({ request }) => {
    const healthy = await request.get("/api/health");
    expect(healthy.status()).toBe(200);
    const degraded = await request.get(`${NO_REDIS_BASE_URL}/api/health`);
    expect(degraded.status()).toBe(503);
    expect(await degraded.json()).toMatchObject({
      status: "degraded",
      postgres: { ok: true },
      redis: { ok: false, error: "connection refused" },
    });
  });
});

test("every area is reachable from the navigation once signed in", async ({ page, signIn }) => {
  await signIn("viewer");
  await page.goto("/");
  for (const area of ["Policies", "Customers", "Overrides", "Audit log", "Dry-run"]) {
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: area }).click();
    await expect(page.getByRole("heading", { name: area, level: 1 })).toBeVisible();
  }
});
