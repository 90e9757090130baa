/**
 * Without a mouse: an operator raises an incident override from a customer's page with the
 * keyboard alone (Tab, typing, Enter), and the change markers on the overview's chart, which
 * group changes close in time, list their changes on hover (1280 px), on a tap (390 px) and with
 * Enter (Escape closes and gives focus back).
 *
 * Runs after incident-raise.spec.ts (files run in name order); it sends traffic of its own so the
 * chart has lines to draw, and reverts what it raises.
 */
import type { Locator, Page } from "@playwright/test";
import { expect, test } from "./fixtures";
import { GATEWAY_URLS } from "./run-env";

const CUSTOMER = "globex";

/** Presses Tab until `target` has focus; fails naming it after `maxPresses`. */
async function tabTo(page: Page, target: Locator, maxPresses = 80): Promise<void> {
  for (let press = 0; press < maxPresses; press++) {
    if (await target.evaluate((element) => element === document.activeElement)) return;
    await page.keyboard.press("Tab");
  }
  throw new Error(`Tab never reached ${target.toString()} in ${maxPresses} presses`);
}

async function sendTraffic(count: number): Promise<void> {
  for (let index = 0; index < count; index++) {
    const gateway = GATEWAY_URLS[index % GATEWAY_URLS.length];
    const response = await fetch(`${gateway}/v1/things`, {
      headers: { "x-customer-id": CUSTOMER },
    });
    await response.arrayBuffer();
  }
}

// A phone's taps: Playwright's tap() needs a touch screen.
test.use({ hasTouch: true });

test("keyboard only: raise an incident override, then read the chart's grouped markers at 1280 and 390", async ({
  page,
  signIn,
}) => {
  test.setTimeout(180_000);
  await signIn("operator");
  await sendTraffic(40);

  // The raise, keyboard only.
  await page.goto(`/customers/${CUSTOMER}`);
  await expect(page.getByRole("heading", { level: 1 })).toBeVisible();
  const raiseLink = page.getByRole("link", { name: "Raise limit (incident)" });
  await tabTo(page, raiseLink);
  await page.keyboard.press("Enter");
  await expect(page.getByRole("heading", { name: "Raise a limit (incident)" })).toBeVisible();
  const reasonField = page.getByLabel("Reason (required)");
  await tabTo(page, reasonField);
  const reason = `e2e keyboard only: globex backfill (${Date.now()})`;
  await page.keyboard.type(reason);
  await tabTo(page, page.getByRole("button", { name: "Review and raise" }));
  await page.keyboard.press("Enter");
  const dialog = page.getByRole("dialog");
  await expect(dialog).toBeVisible();
  // Cancel has focus first, so Enter never confirms by accident.
  await expect(dialog.getByRole("button", { name: "Cancel" })).toBeFocused();
  await tabTo(page, dialog.getByRole("button", { name: "Raise limit" }), 5);
  await page.keyboard.press("Enter");
  await page.waitForURL(/\/incidents\/inc-[0-9a-f]+$/);
  const incidentId = decodeURIComponent(new URL(page.url()).pathname.split("/").pop() ?? "");

  // Revert it, keyboard only too: type the reason, Tab to the button, confirm in the dialog.
  const revertReason = page.getByLabel("Reason to revert (required)");
  await tabTo(page, revertReason);
  await page.keyboard.type("e2e keyboard only: done");
  await tabTo(page, page.getByRole("button", { name: "Revert now" }));
  await page.keyboard.press("Enter");
  await tabTo(page, page.getByRole("dialog").getByRole("button", { name: "Revert override" }), 5);
  await page.keyboard.press("Enter");
  await expect(page.getByRole("heading", { level: 1 })).toContainText("reverted");
  const audit = await page.request.get(
    `/api/v1/audit?entityType=incident&entityId=${encodeURIComponent(incidentId)}`,
  );
  const actions = ((await audit.json()) as { entries: { action: string; reason: string }[] })
    .entries;
  expect(actions.map((entry) => entry.action).sort()).toEqual([
    "incident.raise",
    "incident.revert",
  ]);
  expect(actions.find((entry) => entry.action === "incident.raise")?.reason).toBe(reason);

  // The raise and the revert, seconds apart, share a marker label at either width.
  await sendTraffic(10);
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: width === 1280 ? 800 : 844 });
    await expect(async () => {
      await page.goto("/");
      // The chart streams in after the page; on a busy machine that takes a while.
      await expect(page.getByTestId("chart-marker").last()).toBeVisible({ timeout: 15_000 });
    }).toPass({ timeout: 60_000 });
    // The label holding the raise: the revert, seconds later, joined it (or the raise joined a
    // group begun just before), so it lists two changes or more.
    const group = page
      .locator(".chart-marker-group")
      .filter({ has: page.locator("a", { hasText: `incident.raise ${incidentId}` }) });
    const button = group.getByTestId("chart-marker");
    await expect(button).toHaveText(/^\d+–\d+$/);
    await expect(button).toHaveAttribute(
      "aria-label",
      /^Changes \d+–\d+: \d+ changes close together$/,
    );
    const popover = group.locator(".chart-marker-popover");
    await expect(popover).toBeHidden();

    if (width === 1280) {
      // Hover lists them.
      await button.hover();
      await expect(popover).toBeVisible();
      await expect(popover).toContainText(`incident.raise ${incidentId}`);
      await page.mouse.move(0, 0);
      await expect(popover).toBeHidden();
    } else {
      // A tap keeps them listed; a tap elsewhere closes the list.
      await button.tap();
      await expect(button).toHaveAttribute("aria-expanded", "true");
      await expect(popover).toBeVisible();
      await expect(
        popover.getByRole("link", { name: `incident.raise ${incidentId}` }),
      ).toHaveAttribute("href", /^\/audit\?entry=\d+$/);
      await page.getByRole("heading", { level: 1 }).tap();
      await expect(popover).toBeHidden();
    }

    // Keyboard: Enter opens, Tab reaches the links, Escape closes and gives focus back.
    await button.focus();
    await page.keyboard.press("Enter");
    await expect(button).toHaveAttribute("aria-expanded", "true");
    await page.keyboard.press("Tab");
    await expect(popover.getByRole("link").first()).toBeFocused();
    await page.keyboard.press("Escape");
    await expect(popover).toBeHidden();
    await expect(button).toBeFocused();
    await page.screenshot({
      path: test.info().outputPath(`overview-markers-${width}.png`),
      fullPage: true,
    });
  }
});
