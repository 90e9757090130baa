/**
 * Dry-run end to end: an operator creates a stricter candidate through the console; traffic driven
 * at the demo gateways sits below the enforced limit but above the candidate's, so the candidate
 * page shows would-block counts while no request is rejected; an admin promotes it; once the
 * enforcers apply the new version the gateways reject at the new limit. Also: discard.
 *
 * Nothing here waits on the clock: every wait is for something observable (a gateway's policy
 * version, a count on the page, a 429 naming the scope).
 */
import { randomBytes } from "node:crypto";
import type { APIRequestContext, Page, TestInfo } from "@playwright/test";
import { expect, test } from "./fixtures";
import { BASE_URL, GATEWAY_URLS, NO_REDIS_BASE_URL } from "./run-env";
import { useSession } from "./support/shared-sessions";

const origin = { origin: BASE_URL };

async function shoot(page: Page, testInfo: TestInfo, name: string): Promise<void> {
  await page.screenshot({ path: testInfo.outputPath(`${name}.png`), fullPage: true });
}

/** What a demo gateway's /healthz says it applied. */
async function appliedBy(url: string): Promise<{ version: number; appliedAtMs: number } | null> {
  const response = await fetch(`${url}/healthz`);
  const status = (await response.json()) as {
    policy: { version: number; appliedAtMs: number } | null;
  };
  return status.policy;
}

/** Every demo gateway enforces at least `version`. */
async function gatewaysAt(version: number): Promise<void> {
  await expect
    .poll(
      async () => {
        const applied = await Promise.all(GATEWAY_URLS.map(appliedBy));
        return Math.min(...applied.map((policy) => policy?.version ?? 0));
      },
      { message: `gateways apply policy version ${version}` },
    )
    .toBeGreaterThanOrEqual(version);
}

interface GatewayAnswer {
  readonly status: number;
  /** The scope a 429 names. */
  readonly scope: string | null;
}

/** `count` concurrent requests of one customer, spread over both gateways. */
async function burst(customerId: string, tier: string, count: number): Promise<GatewayAnswer[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, index) => {
      const url = GATEWAY_URLS[index % GATEWAY_URLS.length];
      const response = await fetch(`${url}/v1/things`, {
        headers: { authorization: `Bearer ${customerId}`, "x-tier": tier },
      });
      const body = response.status === 429 ? ((await response.json()) as { scope?: string }) : null;
      return { status: response.status, scope: body?.scope ?? null };
    }),
  );
}

/** A tier of the test's own, so no other spec's traffic or edits meet it. */
async function createTier(request: APIRequestContext, name: string): Promise<number> {
  const response = await request.post("/api/v1/tiers", {
    headers: origin,
    data: {
      name,
      displayName: `E2E ${name}`,
      limit: { algorithm: "token-bucket", capacity: 100, refillPerSec: 50 },
      reason: "e2e: a tier for the dry-run test",
    },
  });
  expect(response.status(), await response.text()).toBe(201);
  return ((await response.json()) as { policyVersion: number }).policyVersion;
}

/** The span a comparison states: the sentence up to its colon ("Over the 2 min since 14:04, ..."). */
function spanWordsOf(text: string | null): string {
  const words = (text ?? "").split(": ")[0] ?? "";
  expect(words).toMatch(/^Over the /);
  return words;
}

/**
 * Errors the browser logged (hydration mismatches, script errors): a page that works says none.
 * Failed loads are left out: the refusals these tests provoke (400, 409) and the absent favicon.
 */
const consoleErrors: string[] = [];
test.beforeEach(({ page }) => {
  consoleErrors.length = 0;
  page.on("console", (message) => {
    if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) {
      consoleErrors.push(message.text());
    }
  });
});
test.afterEach(() => {
  expect(consoleErrors).toEqual([]);
});

test.describe("dry-run", () => {
  test("an operator's stricter candidate counts would-blocks without rejecting; promoted, it rejects", async ({
    page,
  }, testInfo) => {
    // Counts start with the first whole minute after the candidate's creation: up to a minute more.
    test.setTimeout(180_000);
    const tier = `e2e-dry-${randomBytes(3).toString("hex")}`;
    const customerId = `${tier}-customer`;
    const candidateId = `${tier}-stricter`;

    await useSession(page.context(), "admin");
    await gatewaysAt(await createTier(page.request, tier));

    await useSession(page.context(), "operator");
    await page.goto("/dry-run");
    await expect(page.getByRole("heading", { name: "Dry-run", level: 1 })).toBeVisible();
    await shoot(page, testInfo, "dry-run");
    // From the tier, which an operator may read but not change, to a candidate for it.
    await page.goto(`/policies/tiers/${tier}`);
    await expect(page.getByTestId("read-only")).toContainText("Only admins");
    await shoot(page, testInfo, "tier-operator");
    await page.getByRole("link", { name: "dry-run candidate" }).click();
    await expect(page.getByLabel("Rule it would replace")).toHaveValue(`tier:${tier}`);
    await expect(page.getByTestId("target-current")).toContainText("50/s, bursts of 100");
    // Too small first: the API's whole-policy rule (a limit must hold one request of the costliest
    // class, reports at 10) comes back at the field.
    await page.getByLabel("Burst (capacity)").fill("5");
    await page.getByLabel("Sustained rate (per second)").fill("2");
    await page.getByLabel("Name (optional)").fill(candidateId);
    await page.getByRole("button", { name: "Start dry-run" }).click();
    await expect(page.getByTestId("candidate-reason-error")).toContainText("Say why");
    await page.getByLabel("Reason (required)").fill("e2e: would 10 a burst be enough?");
    await page.getByRole("button", { name: "Start dry-run" }).click();
    await expect(page.getByTestId("candidate-limit-size-error")).toContainText(
      'less than the 10 units one request to endpoint class "reports" costs',
    );
    await shoot(page, testInfo, "dry-run-create-error");
    await page.getByLabel("Burst (capacity)").fill("10");
    await page.getByRole("button", { name: "Start dry-run" }).click();

    await expect(page).toHaveURL(new RegExp(`/dry-run/${candidateId}$`));
    await expect(page.getByTestId("candidate-limit")).toContainText("2/s, bursts of 10");
    await expect(page.getByTestId("in-force")).toContainText("50/s, bursts of 100");
    // An operator may discard but not promote.
    await expect(page.getByRole("button", { name: "Promote…" })).toHaveCount(0);
    await expect(page.getByRole("button", { name: "Discard…" })).toBeVisible();
    // Just created: either no whole minute has begun since, or the span starts at the first one.
    await expect(page.getByTestId("compared-span")).toContainText(
      /nothing is counted yet|the first whole minute after it was created at/,
    );
    await expect(page.getByTestId("chart-marker-list")).toContainText(`${candidateId} created:`);

    // The candidate reaches the gateways with the version its creation made.
    const audit = await page.request.get(
      `/api/v1/audit?entityType=candidate&entityId=${candidateId}&limit=1`,
    );
    const [created] = ((await audit.json()) as { entries: { policyVersion: number }[] }).entries;
    expect(created?.policyVersion).toBeGreaterThan(0);
    await gatewaysAt(created?.policyVersion ?? Number.POSITIVE_INFINITY);

    // Bursts of 20 at most about once a second: within 100 and 50/s, beyond 10 and 2/s. The page
    // refreshes itself; the loop ends when it shows would-blocks.
    const answers: GatewayAnswer[] = [];
    await expect(async () => {
      answers.push(...(await burst(customerId, tier, 20)));
      const shown = Number(
        (await page.getByTestId("would-block-total").textContent())?.replaceAll(",", ""),
      );
      expect(shown).toBeGreaterThan(0);
    }).toPass({ timeout: 100_000, intervals: [1_000] });
    expect(answers.length).toBeGreaterThan(0);
    expect(answers.filter((answer) => answer.status !== 200)).toEqual([]);
    await expect(page.getByTestId("blocked-total")).toHaveText("0");
    // Both totals and the chart's sentence state one span: the minutes since the creation.
    await expect(async () => {
      const span = page.getByTestId("compared-span");
      await expect(span).toContainText("the first whole minute after it was created at");
      const startMs = await span.getAttribute("data-span-start-ms");
      const endMs = await span.getAttribute("data-span-end-ms");
      for (const box of ["would-block-total-box", "blocked-total-box"]) {
        await expect(page.getByTestId(box)).toHaveAttribute("data-span-start-ms", startMs ?? "");
        await expect(page.getByTestId(box)).toHaveAttribute("data-span-end-ms", endMs ?? "");
      }
      const words = spanWordsOf(await span.textContent());
      await expect(page.locator(".chart-summary")).toContainText(words);
      await expect(page.locator(".chart-summary")).toContainText("it would have blocked");
    }).toPass({ timeout: 15_000 });
    // The chart marks the creation, named for assistive technology.
    await expect(
      page.getByRole("button", { name: new RegExp(`^Change 1: ${candidateId} created`) }),
    ).toBeVisible();
    await shoot(page, testInfo, "dry-run-candidate");

    await page.goto("/dry-run");
    await expect(page.getByTestId(`comparison-${candidateId}`)).toContainText(
      "the first whole minute after it was created at",
    );
    await expect(page.getByTestId(`comparison-${candidateId}`)).toContainText(
      "it would have blocked",
    );
    await shoot(page, testInfo, "dry-run-with-candidate");
    await page.setViewportSize({ width: 390, height: 844 });
    await shoot(page, testInfo, "dry-run-phone");
    await page.goto(`/dry-run/${candidateId}`);
    await expect(page.getByTestId("would-block-total")).toBeVisible();
    await shoot(page, testInfo, "dry-run-candidate-phone");
    await page.setViewportSize({ width: 1280, height: 720 });

    // An admin promotes it, with a reason and a confirmation.
    await useSession(page.context(), "admin");
    await page.goto(`/dry-run/${candidateId}`);
    const promote = page.getByRole("button", { name: "Promote…" });
    await expect(promote).toBeDisabled();
    await page.getByLabel("Reason (required)").first().fill("e2e: the numbers look right");
    await promote.click();
    const dialog = page.getByRole("dialog", { name: `Enforce candidate ${candidateId}?` });
    await expect(dialog).toContainText("instead of 50/s, bursts of 100");
    // The dialog's evidence is the page's comparison: the same span words, the same totals.
    await expect(async () => {
      const words = spanWordsOf(await page.getByTestId("compared-span").textContent());
      const wouldBlock = await page.getByTestId("would-block-total").textContent();
      const evidence = dialog.getByTestId("promote-evidence");
      await expect(evidence).toContainText(words, { timeout: 1_000 });
      await expect(evidence).toContainText(`it would have blocked ${wouldBlock} of`, {
        timeout: 1_000,
      });
      await expect(evidence).toContainText(`tier:${tier} blocked 0 of`, { timeout: 1_000 });
    }).toPass({ timeout: 15_000 });
    await shoot(page, testInfo, "dry-run-promote-confirm");
    await dialog.getByRole("button", { name: "Promote and enforce" }).click();
    await expect(page.getByTestId("done-notice")).toContainText("was promoted");
    const version = Number(await page.getByTestId("done-version").textContent());
    await shoot(page, testInfo, "dry-run-promoted");

    // The enforcers pick the new version up, then reject at the new limit, naming the tier.
    await gatewaysAt(version);
    // Recorded, never asserted: from the promotion's commit to the last gateway applying it.
    const promotion = await page.request.get(
      `/api/v1/audit?entityType=tier&entityId=${tier}&limit=1`,
    );
    const [promotionEntry] = ((await promotion.json()) as { entries: { at: string }[] }).entries;
    const applied = await Promise.all(GATEWAY_URLS.map(appliedBy));
    const lagMs =
      Math.max(...applied.map((item) => item?.appliedAtMs ?? Number.NaN)) -
      Date.parse(promotionEntry?.at ?? "");
    testInfo.annotations.push({
      type: "propagation",
      description: `promotion committed to applied by all ${GATEWAY_URLS.length} gateways: ${lagMs} ms`,
    });
    console.log(`propagation: promotion to all gateways ${lagMs} ms`);
    await page.reload();
    await expect(page.getByTestId("rollout")).toHaveAttribute("data-at-version", "2");
    await expect(page.getByTestId("rollout")).toContainText("2 of 2 enforcers");
    await shoot(page, testInfo, "dry-run-promoted-rolled-out");
    await expect
      .poll(
        async () =>
          (await burst(customerId, tier, 20)).filter(
            (answer) => answer.status === 429 && answer.scope === `tier:${tier}`,
          ).length,
        { message: "gateways reject at the promoted limit" },
      )
      .toBeGreaterThan(0);

    const tierAudit = await page.request.get(
      `/api/v1/audit?entityType=tier&entityId=${tier}&limit=1`,
    );
    const [promoted] = (
      (await tierAudit.json()) as {
        entries: { action: string; reason: string; policyVersion: number; after: unknown }[];
      }
    ).entries;
    expect(promoted).toMatchObject({
      action: "candidate.promote",
      reason: "e2e: the numbers look right",
      policyVersion: version,
      after: { limit: { capacity: 10, refillPerSec: 2, mode: "enforce" } },
    });
    await page.goto(`/policies/tiers/${tier}`);
    await expect(page.getByTestId("current-limit")).toContainText("2/s, bursts of 10");
    await shoot(page, testInfo, "tier-after-promotion");
  });

  test("an operator discards a candidate with a reason; the rule stays", async ({
    page,
  }, testInfo) => {
    const tier = `e2e-disc-${randomBytes(3).toString("hex")}`;
    await useSession(page.context(), "admin");
    await createTier(page.request, tier);
    await useSession(page.context(), "operator");
    const created = await page.request.post("/api/v1/candidates", {
      headers: origin,
      data: {
        id: `${tier}-try`,
        target: `tier:${tier}`,
        limit: { algorithm: "token-bucket", capacity: 10, refillPerSec: 2 },
        reason: "e2e: to be discarded",
      },
    });
    expect(created.status(), await created.text()).toBe(201);
    await page.goto(`/dry-run/${tier}-try`);
    // Other numbers first: the candidate keeps running with them.
    await page.getByText("Try other numbers").click();
    await page.locator("#update-limit-size").fill("30");
    await page.getByLabel("Reason for the change (required)").fill("e2e: a little looser");
    await page.getByRole("button", { name: "Change the candidate" }).click();
    await expect(page.getByTestId("candidate-limit")).toContainText("2/s, bursts of 30");
    // Counts from before the change describe another limit: the span starts after the change,
    // and the chart lists the creation and the change.
    await expect(page.getByTestId("compared-span")).toContainText("last changed at");
    await expect(page.getByTestId("chart-marker-list").getByRole("listitem")).toHaveText([
      new RegExp(`${tier}-try created: 2/s, bursts of 10`),
      new RegExp(`${tier}-try changed to 2/s, bursts of 30`),
    ]);
    await shoot(page, testInfo, "dry-run-candidate-changed");

    await page.getByLabel("Reason (required)", { exact: true }).fill("e2e: not what we want");
    await page.getByRole("button", { name: "Discard…" }).click();
    const dialog = page.getByRole("dialog", { name: `Discard candidate ${tier}-try?` });
    await shoot(page, testInfo, "dry-run-discard-confirm");
    await dialog.getByRole("button", { name: "Discard candidate" }).click();
    await expect(page.getByTestId("done-notice")).toContainText("was discarded");
    await expect(page.getByTestId(`candidate-${tier}-try`)).toHaveCount(0);
    await shoot(page, testInfo, "dry-run-discarded");
    const audit = await page.request.get(
      `/api/v1/audit?entityType=candidate&entityId=${tier}-try&limit=1`,
    );
    const [entry] = ((await audit.json()) as { entries: { action: string; reason: string }[] })
      .entries;
    expect(entry).toMatchObject({ action: "candidate.discard", reason: "e2e: not what we want" });
    const tierNow = await page.request.get(`/api/v1/tiers/${tier}`);
    expect(
      ((await tierNow.json()) as { tier: { limit: { capacity: number } } }).tier.limit.capacity,
    ).toBe(100);
  });

  test("a viewer sees the candidates but is offered neither create, promote nor discard", async ({
    page,
  }, testInfo) => {
    await useSession(page.context(), "viewer");
    await page.goto("/dry-run");
    await expect(page.getByTestId("candidate-free-halved")).toBeVisible();
    await expect(page.getByTestId("read-only")).toContainText("Operators and admins can create");
    await expect(page.getByRole("button", { name: "Start dry-run" })).toHaveCount(0);
    await shoot(page, testInfo, "dry-run-viewer");
    await page.getByRole("link", { name: "free-halved" }).click();
    await expect(
      page.getByText("Operators can discard a candidate and admins can promote it."),
    ).toBeVisible();
    await expect(page.getByRole("button", { name: /Promote|Discard/ })).toHaveCount(0);
    await expect(page.getByText("Try other numbers")).toHaveCount(0);
    await shoot(page, testInfo, "dry-run-candidate-viewer");
    const refused = await page.request.post("/api/v1/candidates/free-halved/discard", {
      headers: origin,
      data: { expectedVersion: 1, reason: "e2e: viewer tries" },
    });
    expect(refused.status()).toBe(403);
  });
  test("without Redis the candidate page still shows the history and says the live minutes are missing", async ({
    page,
  }, testInfo) => {
    // Session cookies are not tied to a port: the same session works on the no-Redis server.
    await useSession(page.context(), "viewer");
    await page.goto(`${NO_REDIS_BASE_URL}/dry-run/free-halved`);
    await expect(page.getByRole("heading", { level: 1 })).toContainText("free-halved");
    await expect(
      page.getByText("Redis cannot be read: the last few minutes are missing."),
    ).toBeVisible();
    await shoot(page, testInfo, "dry-run-candidate-no-redis");
    await page.goto(`${NO_REDIS_BASE_URL}/policies`);
    await expect(
      page.getByText("Which enforcers run it is unknown: Redis cannot be read."),
    ).toBeVisible();
    await shoot(page, testInfo, "policies-no-redis");
  });
});
