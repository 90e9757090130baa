/**
 * Backtests in the console: a gateway of this spec's own records its traffic (the global setup's
 * gateways do not record), the worker moves the record into Postgres, and an admin's tier edit
 * shows, in its preview, what the edit would have done to that traffic; the numbers shown are the
 * API's for the same draft (`POST /api/v1/backtest`). Before any traffic is recorded, the
 * dry-run form's backtest says there is nothing to replay.
 *
 * A token bucket whose refill is negligible over a burst (0.001/s) makes the outcomes exact on any
 * machine: 40 simultaneous requests on capacity 20 admit exactly 20; on capacity 30, 30.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import path from "node:path";
import type { APIRequestContext } from "@playwright/test";
import { expect, test } from "./fixtures";
import { BASE_URL, E2E_PORT, runEnvironment } from "./run-env";
import { seriousViolations } from "./support/axe";
import { useSession } from "./support/shared-sessions";

const origin = { origin: BASE_URL };
const ROOT = path.resolve(import.meta.dirname, "..");
/** Clear of the global setup's gateways (E2E_PORT + 10, + 11). */
const RECORDING_GATEWAY_URL = `http://127.0.0.1:${E2E_PORT + 20}`;
const SLOW_PER_SEC = 0.001;

let gateway: ChildProcess | null = null;

test.beforeAll(async () => {
  gateway = spawn(
    process.execPath,
    [
      "--conditions=react-server",
      "--import",
      "tsx",
      "scripts/gateway.ts",
      "--port",
      String(E2E_PORT + 20),
      "--id",
      "e2e-recording",
      "--expected-gateways",
      "3",
      "--no-local-stage",
      "--record",
    ],
    { cwd: ROOT, env: runEnvironment(), stdio: ["ignore", "ignore", "inherit"], detached: true },
  );
  await expect
    .poll(
      async () => {
        try {
          return (await fetch(`${RECORDING_GATEWAY_URL}/healthz`)).status;
        } catch {
          return 0;
        }
      },
      { message: "the recording gateway enforces a policy", timeout: 60_000 },
    )
    .toBe(200);
});

test.afterAll(() => {
  if (gateway?.pid !== undefined && gateway.exitCode === null) {
    try {
      process.kill(-gateway.pid, "SIGTERM");
    } catch {
      // Already gone.
    }
  }
});

interface BacktestAnswer {
  readonly isEmpty: boolean;
  readonly totals: { readonly moreAdmitted: number; readonly moreRejected: number };
  readonly byTier: readonly {
    readonly tier: string | null;
    readonly requests: number;
    readonly nowRejected: number;
    readonly draftRejected: number;
    readonly customersAffected: number;
  }[];
  readonly mostAffected: readonly {
    readonly customerId: string | null;
    readonly moreRejected: number;
    readonly moreAdmitted: number;
    readonly bindingNow: string | null;
    readonly bindingDraft: string | null;
  }[];
  readonly customersAffected: number;
  readonly trust: { readonly recordedRequests: number; readonly sampleRates: readonly number[] };
}

async function backtest(request: APIRequestContext, draft: unknown): Promise<BacktestAnswer> {
  const response = await request.post("/api/v1/backtest", { headers: origin, data: { draft } });
  expect(response.status(), await response.text()).toBe(200);
  return (await response.json()) as BacktestAnswer;
}

/** `count` simultaneous requests of one customer at the recording gateway; the 200s. */
async function burst(customerId: string, tier: string, count: number): Promise<number> {
  const statuses = await Promise.all(
    Array.from({ length: count }, async () => {
      const response = await fetch(`${RECORDING_GATEWAY_URL}/v1/things`, {
        headers: { authorization: `Bearer ${customerId}`, "x-tier": tier },
      });
      await response.arrayBuffer();
      return response.status;
    }),
  );
  return statuses.filter((status) => status === 200).length;
}

const format = (value: number) => new Intl.NumberFormat("en-US").format(Math.round(value));

test.describe("backtest", () => {
  test("with nothing recorded yet, the dry-run form's backtest says there is nothing to replay", async ({
    page,
  }) => {
    await useSession(page.context(), "operator");
    const draft = {
      kind: "candidate",
      target: "tier:free",
      limit: { algorithm: "token-bucket", capacity: 50, refillPerSec: 1 },
    };
    expect((await backtest(page.request, draft)).isEmpty).toBe(true);
    await page.goto("/dry-run?target=tier:free");
    const panel = page.getByTestId("backtest");
    await expect(panel).toHaveAttribute("data-state", "idle");
    await panel.getByRole("button", { name: "Run backtest" }).click();
    await expect(panel.getByTestId("backtest-empty")).toContainText(
      "No traffic was recorded in the last 24 h, so there is nothing to replay.",
    );
    // Editing the limit makes the result stale until it is run again: never a replay per keystroke.
    await page.getByLabel("Burst (capacity)").fill("51");
    await expect(panel.getByTestId("backtest-stale")).toBeVisible();
    await expect(panel).toHaveAttribute("data-state", "stale");
  });

  test("an admin edits a tier and sees its backtest in the preview, with the API's numbers", async ({
    page,
  }, testInfo) => {
    test.setTimeout(120_000);
    const tier = `e2e-bt-${randomBytes(3).toString("hex")}`;
    const customers = [`${tier}-ann`, `${tier}-bob`];
    await useSession(page.context(), "admin");
    const created = await page.request.post("/api/v1/tiers", {
      headers: origin,
      data: {
        name: tier,
        displayName: `E2E ${tier}`,
        limit: { algorithm: "token-bucket", capacity: 20, refillPerSec: SLOW_PER_SEC },
        reason: "e2e: a tier for the backtest test",
      },
    });
    expect(created.status(), await created.text()).toBe(201);
    const { policyVersion } = (await created.json()) as { policyVersion: number };
    await expect
      .poll(
        async () => {
          const status = (await (await fetch(`${RECORDING_GATEWAY_URL}/healthz`)).json()) as {
            policy: { version: number } | null;
          };
          return status.policy?.version ?? 0;
        },
        { message: `the recording gateway applies version ${policyVersion}` },
      )
      .toBeGreaterThanOrEqual(policyVersion);
    // The first is registered, so the incident form opens for it at once.
    const registered = await page.request.post("/api/v1/customers", {
      headers: origin,
      data: { id: customers[0], displayName: "E2E Ann", tier, reason: "e2e: backtest customer" },
    });
    expect(registered.status(), await registered.text()).toBe(201);
    for (const customerId of customers) {
      expect(await burst(customerId, tier, 40)).toBe(20);
    }

    const draftLimit = {
      algorithm: "token-bucket",
      capacity: 30,
      refillPerSec: SLOW_PER_SEC,
      mode: "enforce",
      onStoreFailure: "open",
    };
    const draft = { kind: "tier", name: tier, limit: draftLimit };
    // The worker moves the record into Postgres every few seconds.
    await expect
      .poll(
        async () =>
          (await backtest(page.request, draft)).byTier.find((row) => row.tier === tier)?.requests,
        { message: "the worker moves the recorded bursts into Postgres", timeout: 60_000 },
      )
      .toBe(80);

    await page.goto(`/policies/tiers/${tier}`);
    await page.getByLabel("Burst (capacity)").fill("30");
    await page.getByLabel("Reason (required)").fill("e2e: what would a burst of 30 have done?");
    const sent = page.waitForRequest(
      (request) => request.url().endsWith("/api/v1/backtest") && request.method() === "POST",
    );
    await page.getByRole("button", { name: "Preview change" }).click();
    const panel = page.getByTestId("change-preview").getByTestId("backtest");
    // The console sent the draft the preview shows.
    expect((await sent).postDataJSON()).toMatchObject({ draft, windowMs: 86_400_000 });
    await expect(panel.getByTestId("backtest-result")).toBeVisible({ timeout: 30_000 });

    const api = await backtest(page.request, draft);
    const row = api.byTier.find((item) => item.tier === tier);
    if (row === undefined) throw new Error("the API has no figures for the tier");
    // The scripted bursts: 10 more of each customer's 40 admitted under capacity 30.
    expect(api.totals).toMatchObject({ moreAdmitted: 20, moreRejected: 0 });
    expect(row).toMatchObject({ requests: 80, nowRejected: 40, draftRejected: 20 });
    expect(api.trust.sampleRates).toEqual([1]);

    await expect(panel.getByTestId("backtest-headline")).toHaveText(
      `Over the last 24 h this would have admitted ${format(api.totals.moreAdmitted)} more requests of ${tier} traffic, rejecting 25% of it (50% now), ${row.customersAffected} customers affected.`,
    );
    await expect(panel.getByTestId("backtest-requests")).toHaveText(format(row.requests));
    await expect(panel.getByTestId("backtest-now-rejected")).toHaveText(format(row.nowRejected));
    await expect(panel.getByTestId("backtest-draft-rejected")).toHaveText(
      format(row.draftRejected),
    );
    await expect(panel.getByTestId("backtest-more-admitted")).toHaveText(
      format(api.totals.moreAdmitted),
    );
    await expect(panel.getByTestId("backtest-more-rejected")).toHaveText(
      format(api.totals.moreRejected),
    );
    await expect(panel.getByTestId("backtest-customers-affected")).toHaveText(
      format(row.customersAffected),
    );
    expect(row.customersAffected).toBe(2);

    // The most affected customers, row by row: changed outcomes and the binding scopes.
    const rows = panel.getByTestId("backtest-affected-row");
    await expect(rows).toHaveCount(api.mostAffected.length);
    expect(api.mostAffected.map((entry) => entry.customerId).sort()).toEqual(customers);
    for (const [index, entry] of api.mostAffected.entries()) {
      const shown = rows.nth(index);
      await expect(shown.getByRole("rowheader")).toContainText(entry.customerId ?? "anonymous");
      await expect(shown.getByTestId("affected-more-admitted")).toHaveText(
        format(entry.moreAdmitted),
      );
      await expect(shown.getByTestId("affected-more-rejected")).toHaveText(
        format(entry.moreRejected),
      );
      await expect(shown).toContainText(entry.bindingNow ?? "no limit bound");
      expect(entry.bindingNow).toBe(`tier:${tier}`);
    }

    // How far to trust it: every request recorded, no gaps.
    const trust = panel.getByTestId("backtest-trust");
    await expect(trust.getByTestId("backtest-trust-record")).toHaveText(
      `${format(api.trust.recordedRequests)} requests recorded by 1 gateway.`,
    );
    await expect(trust.getByTestId("backtest-trust-sampling")).toHaveText(
      "Every request recorded (no sampling).",
    );
    await expect(trust.getByTestId("backtest-trust-gaps")).toHaveText("No gaps in the record.");
    await page.screenshot({
      path: testInfo.outputPath("tier-preview-backtest.png"),
      fullPage: true,
    });
    expect(await seriousViolations(page), "axe on the tier preview with its backtest").toEqual([]);
    // At phone width the figures, charts and table fit (the table scrolls inside its region).
    await page.setViewportSize({ width: 390, height: 844 });
    await expect(panel.getByTestId("backtest-headline")).toBeVisible();
    expect(await seriousViolations(page), "axe on the tier preview at phone width").toEqual([]);
    await page.screenshot({ path: testInfo.outputPath("tier-preview-phone.png"), fullPage: true });
    await page.setViewportSize({ width: 1280, height: 720 });

    // The incident raise form: the last hour, in the customer's words; a button, not per keystroke.
    await useSession(page.context(), "operator");
    const [ann] = customers;
    await page.goto(`/incidents/new?customer=${ann}`);
    await expect(page.getByLabel("Multiply by")).toHaveValue("3");
    const raise = page.getByTestId("backtest");
    const raiseDraft = {
      kind: "incident",
      customerId: ann,
      endpointClass: null,
      factor: 3,
      limit: null,
    };
    const raiseSent = page.waitForRequest(
      (request) => request.url().endsWith("/api/v1/backtest") && request.method() === "POST",
    );
    await raise.getByRole("button", { name: "Run backtest" }).click();
    expect((await raiseSent).postDataJSON()).toEqual({ draft: raiseDraft, windowMs: 3_600_000 });
    await expect(raise.getByTestId("backtest-result")).toBeVisible({ timeout: 30_000 });
    const raised = await backtest(page.request, raiseDraft);
    // Capacity 60 instead of 20: all 40 of ann's requests admitted, 20 more than recorded.
    expect(raised.totals).toMatchObject({ moreAdmitted: 20, moreRejected: 0 });
    await expect(raise.getByTestId("backtest-headline")).toHaveText(
      `The raise would have admitted ${format(raised.totals.moreAdmitted)} more of ${ann}'s requests in the last hour (out of 40 in the window).`,
    );
    await page.screenshot({ path: testInfo.outputPath("incident-backtest.png"), fullPage: true });
    expect(await seriousViolations(page), "axe on the raise form with its backtest").toEqual([]);
  });
});
