/**
 * What an operator sees of Redis failover: the topology the demo gateways report in their
 * heartbeats (one Redis here, the run's shared server, with no replica), on the status page and
 * under the overview's fleet; and a failover the enforcers recorded, marked on the overview's
 * chart with a link to that topology. The recording itself (a real Sentinel failover, the
 * gateways noticing the new primary) is asserted by test/integration/sentinel-failover.test.ts;
 * here the record is written as an enforcer writes it, since the run's shared Redis cannot fail
 * over.
 */
import { Redis } from "ioredis";
import { expect, test } from "./fixtures";
import { E2E_REDIS_PREFIX, E2E_REDIS_URL } from "./run-env";

const redisAddress = (() => {
  const url = new URL(E2E_REDIS_URL);
  return `${url.hostname}:${url.port === "" ? "6379" : url.port}`;
})();

test("the status page and the fleet show the Redis topology the gateways see", async ({
  page,
  signIn,
}) => {
  await signIn("viewer");
  await page.goto("/status");
  const topology = page.getByTestId("redis-topology-row");
  // Both demo gateways beat every second; their first beat after start carries the topology.
  await expect(topology).toHaveCount(1, { timeout: 15_000 });
  await expect(topology).toContainText("one Redis");
  await expect(topology.getByRole("cell").nth(1)).toContainText(redisAddress);
  await expect(topology.getByRole("cell").nth(2)).toContainText("none");
  await expect(topology.getByRole("cell").nth(3)).toContainText("2");

  await page.goto("/");
  const fleet = page.getByTestId("overview-fleet");
  await expect(
    fleet.getByRole("heading", { name: "Redis topology the gateways see" }),
  ).toBeVisible();
  await expect(fleet.getByTestId("redis-topology-row")).toContainText(redisAddress);
});

test("a failover the enforcers recorded is a marker on the overview's chart", async ({
  page,
  signIn,
}) => {
  const redis = new Redis(E2E_REDIS_URL);
  const atMs = Date.now() - 5 * 60_000;
  const key = `${E2E_REDIS_PREFIX}redis:failovers`;
  try {
    // Two gateways saw the same change a second apart: one failover.
    for (const [offsetMs, enforcerId] of [
      [0, "e2e-gw-a"],
      [1_000, "e2e-gw-b"],
    ] as const) {
      await redis.zadd(
        key,
        atMs + offsetMs,
        JSON.stringify({
          atMs: atMs + offsetMs,
          from: "10.0.0.1:6379",
          to: "10.0.0.2:6379",
          enforcerId,
        }),
      );
    }
    await signIn("viewer");
    await page.goto("/");
    const markers = page.getByRole("list", { name: "Changes in this range" });
    const failover = markers.getByRole("listitem").filter({ hasText: "Redis failover" });
    await expect(failover).toHaveCount(1);
    const link = failover.getByRole("link", {
      name: "Redis primary 10.0.0.1:6379 replaced by 10.0.0.2:6379",
    });
    await expect(link).toHaveAttribute("href", "/status#redis-topology");
    // The overview streams its sections in; a skeleton swapped for its content moves the list
    // below it. Click once nothing is loading, and click again if a late swap moved the link
    // out from under the pointer (a clean CI run on a busy host saw the click land elsewhere).
    await expect(page.locator('[aria-busy="true"]')).toHaveCount(0);
    await expect(async () => {
      if (!/\/status#redis-topology$/.test(page.url())) await link.click({ timeout: 5_000 });
      await expect(page).toHaveURL(/\/status#redis-topology$/, { timeout: 5_000 });
    }).toPass({ timeout: 30_000 });
    await expect(
      page.getByRole("heading", { name: "Redis topology the gateways see" }),
    ).toBeVisible();
  } finally {
    await redis.del(key);
    redis.disconnect();
  }
});
