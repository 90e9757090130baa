/**
 * The audit webhook in the browser: an admin finds it from the audit log, is told what is wrong
 * at the URL field (empty, then an address the console refuses), sets it, is shown the signing
 * secret once, and sees the change as a sentence in the audit log and its own delivery queued
 * (the receiver's name does not resolve, so the worker reports the failure and retries); then
 * turns it off. A viewer is told only admins see it. The spec leaves the webhook off, as it
 * found it, so later specs' entries queue nothing.
 */
import type { APIRequestContext } from "@playwright/test";
import { expect, test } from "./fixtures";
import { apiAs } from "./support/shared-sessions";

const RECEIVER = "https://siem.example.test/limitplane";

async function turnOff(admin: APIRequestContext): Promise<void> {
  const read = await admin.get("/api/v1/audit-webhook");
  expect(read.status(), await read.text()).toBe(200);
  const { settings } = (await read.json()) as { settings: { url: string | null; version: number } };
  if (settings.url === null) return;
  const off = await admin.put("/api/v1/audit-webhook", {
    data: { url: null, expectedVersion: settings.version, reason: "e2e: audit webhook spec done" },
  });
  expect(off.status(), await off.text()).toBe(200);
}

test("an admin sets the audit webhook, sees its audit entry and delivery, and turns it off", async ({
  page,
  signIn,
}) => {
  test.setTimeout(90_000);
  const admin = await apiAs("admin");
  await turnOff(admin);
  try {
    await signIn("admin");
    await page.goto("/audit");
    await page
      .getByRole("navigation", { name: "Main" })
      .getByRole("link", { name: "Audit webhook" })
      .click();
    await expect(page.getByRole("heading", { name: "Audit webhook", level: 1 })).toBeVisible();
    await expect(
      page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Audit webhook" }),
    ).toHaveAttribute("aria-current", "page");
    await expect(page.getByRole("heading", { name: /^Now/ })).toContainText("off");
    await expect(page.getByTestId("webhook-deliveries")).toContainText("Nothing sent yet");

    const form = page.getByRole("form", { name: "Audit webhook" });
    const url = form.getByLabel("Receiver URL");
    const reason = form.getByLabel("Reason (required)");
    const save = form.getByRole("button", { name: "Save webhook" });

    // Nothing typed: the URL field and the reason say what they need.
    await url.fill("");
    await save.click();
    await expect(form.getByText("Give the receiver's URL (https://…)")).toBeVisible();
    await expect(url).toHaveAttribute("aria-invalid", "true");

    // An address the console refuses: the API's words, at the field.
    await url.fill("http://127.0.0.1:9/hook");
    await reason.fill("e2e: feed the SIEM");
    await save.click();
    await expect(
      form.getByText(/^url points at 127\.0\.0\.1, which is not a public address/),
    ).toBeVisible();
    await expect(form.getByTestId("webhook-saved")).toHaveCount(0);

    // A public name: saved, the secret shown once.
    await url.fill(`${RECEIVER}?token=e2e-receiver-token`);
    await reason.fill("e2e: feed the SIEM");
    await save.click();
    const saved = form.getByTestId("webhook-saved");
    await expect(saved).toContainText("Saved.");
    await expect(saved.getByTestId("webhook-signing-secret")).toHaveText(
      /^whsec_[A-Za-z0-9_-]{43}$/,
    );
    await expect(page.getByRole("heading", { name: /^Now/ })).toContainText("on");
    await expect(page.getByTestId("webhook-url")).toHaveText(
      `${RECEIVER}?token=e2e-receiver-token`,
    );

    // The change is a sentence in the audit log, without the receiver's token.
    const read = await admin.get("/api/v1/audit-webhook");
    expect(((await read.json()) as { settings: { url: string } }).settings.url).toBe(
      `${RECEIVER}?token=e2e-receiver-token`,
    );
    await page.goto("/audit?entityType=audit-webhook&entityId=audit-webhook");
    const entry = page.getByTestId("audit-entry").first();
    await expect(entry).toContainText(`audit webhook set to ${RECEIVER}?…; new signing secret`);
    await expect(entry).toContainText("e2e: feed the SIEM");
    await expect(page.getByText("e2e-receiver-token")).toHaveCount(0);

    // Its own entry is the first one queued; the name does not resolve, so it waits and retries.
    await page.goto("/audit/webhook");
    const delivery = page.getByTestId("webhook-delivery").first();
    await expect(delivery).toContainText("audit-webhook.update");
    await expect(async () => {
      await page.reload();
      await expect(page.getByTestId("webhook-delivery").first()).toContainText("failed, retrying", {
        timeout: 1_000,
      });
    }).toPass({ timeout: 30_000 });
    await expect(page.getByTestId("webhook-waiting")).toContainText("1 entry waits to be sent");
    await page.screenshot({
      path: test.info().outputPath("audit-webhook-retrying.png"),
      fullPage: true,
    });

    // Turned off from the form: nothing waits any more.
    await form.getByLabel("Send every audit entry to this URL").uncheck();
    await expect(url).toBeDisabled();
    await reason.fill("e2e: the SIEM is not ready");
    await save.click();
    await expect(saved).toContainText("The webhook is off");
    await expect(page.getByRole("heading", { name: /^Now/ })).toContainText("off");
    // Turning it off dropped the entry that was waiting.
    await expect(page.getByTestId("webhook-deliveries")).toContainText("Nothing sent yet");
  } finally {
    await turnOff(admin);
    await admin.dispose();
  }
});

test("a viewer is told only admins see the audit webhook", async ({ page, signIn }) => {
  await signIn("viewer");
  await page.goto("/audit/webhook");
  await expect(page.getByRole("heading", { name: "Audit webhook", level: 1 })).toBeVisible();
  await expect(page.getByTestId("read-only")).toContainText("only admins see and change");
  await expect(page.getByRole("form", { name: "Audit webhook" })).toHaveCount(0);
});
