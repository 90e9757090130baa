/**
 * Required approval in the browser: with approvals on, the first admin's ceiling change is held
 * back by the settings form, which offers to request it; a second admin, signed in separately in
 * a browser context of their own, finds it on the overview and in the queue, reads the diff and
 * approves it; the change is in force and the request, decision and change are linked in the
 * audit log. The spec turns approvals off and restores the ceiling afterwards, so later specs see
 * the policy as they expect.
 */
import { randomBytes } from "node:crypto";
import type { APIRequestContext } from "@playwright/test";
import { expect, test } from "./fixtures";
import { BASE_URL } from "./run-env";
import { apiAs } from "./support/shared-sessions";

const SECOND = {
  email: `bea-${randomBytes(3).toString("hex")}@e2e.test`,
  name: "Bea Second",
  password: "e2e-second-admin-password-1",
};

async function json<T>(response: Awaited<ReturnType<APIRequestContext["get"]>>): Promise<T> {
  expect(response.status(), await response.text()).toBeLessThan(300);
  return (await response.json()) as T;
}

async function setApprovals(admin: APIRequestContext, isEnabled: boolean): Promise<void> {
  const { settings } = await json<{ settings: { version: number } }>(
    await admin.get("/api/v1/approval-settings"),
  );
  await json(
    await admin.patch("/api/v1/approval-settings", {
      data: { expectedVersion: settings.version, isEnabled, reason: "e2e: approvals spec" },
    }),
  );
}

test("a second admin, signed in separately, approves a ceiling change the first requested", async ({
  page,
  browser,
  signIn,
}) => {
  const admin = await apiAs("admin");
  const { settings: before } = await json<{
    settings: { ceilings: { perCustomer: { capacity: number; refillPerSec: number } } };
  }>(await admin.get("/api/v1/settings"));
  const original = before.ceilings.perCustomer;
  const wanted = original.capacity - 1;
  await json(
    await admin.post("/api/v1/operators", {
      data: { ...SECOND, role: "admin", reason: "e2e: a second approver" },
    }),
  );
  await setApprovals(admin, true);
  try {
    // The first admin edits the per-customer ceiling; the save is held back.
    await signIn("admin");
    await page.goto("/policies/settings");
    await page.locator("#ceiling-customer-size").fill(String(wanted));
    await page.getByLabel("Reason (required)").fill("e2e: trim the per-customer ceiling");
    await page.getByRole("button", { name: "Preview change" }).click();
    await page.getByRole("button", { name: "Save change" }).click();
    const held = page.getByTestId("approval-required");
    await expect(held).toContainText("needs a second person's approval");
    await expect(held).toContainText("the global ceilings change");
    await held.getByRole("button", { name: "Request approval" }).click();
    await expect(page).toHaveURL(/\/change-requests\/cr_[0-9a-f]{16}$/);
    const requestId = page.url().split("/").at(-1) ?? "";
    await expect(page.getByRole("heading", { level: 1 })).toContainText(requestId);
    await expect(page.getByRole("heading", { level: 1 })).toContainText("pending");
    // The author may not approve their own request.
    await expect(page.getByRole("button", { name: "Approve and apply" })).toHaveCount(0);

    // The second admin signs in through the form, in a browser context of their own.
    const second = await browser.newContext({ baseURL: BASE_URL });
    const secondPage = await second.newPage();
    await secondPage.goto("/sign-in");
    await secondPage.getByLabel("Email").fill(SECOND.email);
    await secondPage.getByLabel("Password").fill(SECOND.password);
    await secondPage.getByRole("button", { name: "Sign in" }).click();
    await expect(secondPage.getByRole("heading", { name: "Overview", level: 1 })).toBeVisible();
    await expect(secondPage.getByTestId("pending-change-requests")).toContainText(
      "1 change request waiting for approval",
    );
    await secondPage.getByRole("link", { name: "Review the queue" }).click();
    await expect(secondPage.getByRole("heading", { name: "Approvals", level: 1 })).toBeVisible();
    await secondPage
      .getByRole("link", { name: /settings\.update/ })
      .first()
      .click();
    await expect(secondPage).toHaveURL(new RegExp(`/change-requests/${requestId}$`));
    const diff = secondPage.getByTestId("change-request-diff");
    await expect(diff).toContainText("ceilings.perCustomer.capacity");
    await expect(diff).toContainText(String(wanted));
    await secondPage.getByLabel("Reason").fill("e2e: checked the preview, go ahead");
    await secondPage.getByRole("button", { name: "Approve and apply" }).click();
    await expect(secondPage.getByRole("heading", { level: 1 })).toContainText("approved");
    await expect(secondPage.getByTestId("change-request-decision")).toContainText(
      "approved by Bea Second",
    );

    // In force, and three linked audit entries.
    const { settings: after } = await json<{
      settings: { ceilings: { perCustomer: { capacity: number } } };
    }>(await admin.get("/api/v1/settings"));
    expect(after.ceilings.perCustomer.capacity).toBe(wanted);
    const { changeRequest } = await json<{
      changeRequest: {
        status: string;
        decision: { byName: string };
        auditEntries: { request: string; decision: string; applied: string };
      };
    }>(await admin.get(`/api/v1/change-requests/${requestId}`));
    expect(changeRequest.status).toBe("approved");
    expect(Object.values(changeRequest.auditEntries).every((entry) => /^\d+$/.test(entry))).toBe(
      true,
    );
    const { entries } = await json<{
      entries: { id: string; action: string; actor: { name: string } }[];
    }>(await admin.get(`/api/v1/audit?entityType=change-request&entityId=${requestId}`));
    expect(entries.map((entry) => entry.action).sort()).toEqual([
      "change-request.approve",
      "change-request.create",
    ]);
    await second.close();
  } finally {
    await setApprovals(admin, false);
    const { settings } = await json<{ settings: { version: number } }>(
      await admin.get("/api/v1/settings"),
    );
    await json(
      await admin.patch("/api/v1/settings", {
        data: {
          expectedVersion: settings.version,
          ceilings: { perCustomer: original },
          reason: "e2e: restore the ceiling",
        },
      }),
    );
    await admin.dispose();
  }
});
