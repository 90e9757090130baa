/**
 * An admin moves an envoyproxy/ratelimit file into the console: previews it, imports it, sees the
 * rules, and a rate-limit service process on the run's Redis answers Envoy's calls by them; one
 * descriptor value is then raised with an incident-style raise on the rule's page and the service's
 * answers change, with no restart; the rule's edit form refuses a bad field, then saves.
 *
 * The service is started here (gRPC on E2E_PORT + 20, HTTP on E2E_PORT + 21) and stopped at the
 * end. Limits are per day, so no window ends during the spec.
 */
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import { rateLimitServiceClient } from "@/lib/ratelimit-service/rls-proto";
import { expect, test } from "./fixtures";
import { E2E_PORT, E2E_REDIS_PREFIX, E2E_REDIS_URL } from "./run-env";

const ROOT = path.resolve(import.meta.dirname, "..");
const GRPC_PORT = E2E_PORT + 20;
const HTTP_URL = `http://127.0.0.1:${E2E_PORT + 21}`;
const DOMAIN = "e2e-tenants";
const YAML = [
  `domain: ${DOMAIN}`,
  "descriptors:",
  "  - key: tenant",
  "    rate_limit: { unit: day, requests_per_unit: 5 }",
  "  - key: tenant",
  "    value: acme",
  "    rate_limit: { unit: day, requests_per_unit: 1 }",
  "",
].join("\n");

let service: ChildProcess | null = null;

function startService(): ChildProcess {
  return spawn(
    process.execPath,
    [
      "--conditions=react-server",
      "--import",
      "tsx",
      "scripts/ratelimit-service.ts",
      "--id",
      "e2e-rls",
    ],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        REDIS_URL: E2E_REDIS_URL,
        REDIS_KEY_PREFIX: E2E_REDIS_PREFIX,
        RATELIMIT_SERVICE_GRPC_PORT: String(GRPC_PORT),
        RATELIMIT_SERVICE_HTTP_PORT: String(E2E_PORT + 21),
        RATELIMIT_SERVICE_GRPC_PLAINTEXT: "true",
        RATELIMIT_SERVICE_SECRET: "e2e-service-secret-0123456789abcdef",
      },
      stdio: ["ignore", "ignore", "inherit"],
      detached: true,
    },
  );
}

async function serviceVersion(): Promise<number | null> {
  try {
    const status = (await (await fetch(`${HTTP_URL}/healthz`)).json()) as {
      policy: { version: number } | null;
    };
    return status.policy?.version ?? null;
  } catch {
    return null;
  }
}

function shouldRateLimit(tenant: string): Promise<string> {
  const Client = rateLimitServiceClient();
  const client = new Client(`127.0.0.1:${GRPC_PORT}`, grpc.credentials.createInsecure());
  return new Promise((resolve, reject) => {
    const method = client.ShouldRateLimit;
    if (typeof method !== "function") {
      reject(new Error("no ShouldRateLimit"));
      return;
    }
    method.call(
      client,
      {
        domain: DOMAIN,
        hits_addend: 0,
        descriptors: [{ entries: [{ key: "tenant", value: tenant }] }],
      },
      (error: grpc.ServiceError | null, reply: { overall_code: string }) => {
        client.close();
        if (error === null) resolve(reply.overall_code);
        else reject(error);
      },
    );
  });
}

async function codes(tenant: string, count: number): Promise<string[]> {
  const result: string[] = [];
  for (let i = 0; i < count; i++) result.push(await shouldRateLimit(tenant));
  return result;
}

test.afterAll(() => {
  if (service?.pid !== undefined && service.exitCode === null) {
    try {
      process.kill(-service.pid, "SIGTERM");
    } catch {
      // Already gone.
    }
  }
});

test("an admin imports an envoyproxy/ratelimit file in the console, sees the rules, and the service's answers follow a raise", async ({
  page,
  signIn,
}) => {
  test.setTimeout(180_000);
  service = startService();
  await signIn("admin");
  await page.goto("/descriptor-rules");
  await expect(page.getByRole("heading", { name: "Descriptor rules", level: 1 })).toBeVisible();

  await page.getByLabel("File name (what problems are reported against)").fill("tenants.yaml");
  await page.getByLabel("YAML").fill(YAML.replace("day", "fortnight"));
  await page.getByLabel("Reason").fill("move tenants from envoyproxy/ratelimit");
  await page.getByRole("button", { name: "Preview" }).click();
  await expect(page.getByTestId("import-error")).toContainText(
    'tenants.yaml:4: descriptors[0].rate_limit.unit: "fortnight" is not a unit',
  );

  await page.getByLabel("YAML").fill(YAML);
  await page.getByRole("button", { name: "Preview" }).click();
  await expect(page.getByTestId("import-preview")).toContainText(
    "Preview, nothing written: 2 added, 0 changed, 0 removed, 0 unchanged",
  );
  await expect(page.getByTestId("descriptor-rules")).toHaveCount(0);

  await page.getByRole("button", { name: "Import" }).click();
  const preview = page.getByTestId("import-preview");
  await expect(preview).toContainText("Imported as policy version");
  const version = Number(/policy version (\d+)/.exec((await preview.textContent()) ?? "")?.[1]);
  const table = page.getByTestId("descriptor-rules");
  await expect(table).toContainText("tenant=acme");
  await expect(table).toContainText(`${DOMAIN}`);

  await expect
    .poll(async () => ((await serviceVersion()) ?? 0) >= version, { timeout: 150_000 })
    .toBe(true);
  expect(await codes("acme", 2)).toEqual(["OK", "OVER_LIMIT"]);

  // Raise tenant=acme for 2 hours, 3x, from the rule's page: its counter continues (one spent).
  await table.getByRole("link", { name: "tenant=acme" }).click();
  await expect(page.getByRole("heading", { level: 1 })).toContainText("tenant=acme");
  await expect(page.getByLabel("Value of tenant")).toHaveValue("acme");
  // The rule's own chart counts what the service decided by it: one admitted, one rejected.
  await expect(async () => {
    await page.reload();
    await expect(page.getByTestId("rule-counts")).toHaveText(
      "In the last hour: 2 decided, 1 rejected.",
      { timeout: 1_000 },
    );
  }).toPass({ timeout: 30_000 });
  await expect(page.getByTestId("rule-traffic")).toContainText("Rejection rate of this rule");
  await page.getByLabel("Factor (2 doubles the limit)").fill("50");
  await page.getByLabel("For", { exact: true }).selectOption({ label: "2 hours" });
  await page.getByLabel("Reason for the raise (required)").fill("acme's launch day");
  await page.getByRole("button", { name: "Raise this value" }).click();
  // Beyond the guardrails: refused, at the factor.
  await expect(page.getByTestId("raise-factor-error")).toContainText("the maximum raise is 10x");
  await page.getByLabel("Factor (2 doubles the limit)").fill("3");
  await page.getByRole("button", { name: "Raise this value" }).click();
  const raises = page.getByTestId("rule-raises");
  await expect(raises).toContainText("tenant=acme");
  await expect(raises).toContainText("3x the rule's limit");
  const saved = page.getByTestId("raise-saved");
  await expect(saved).toContainText("Raised as policy version");
  const raisedAt = Number(/policy version (\d+)/.exec((await saved.textContent()) ?? "")?.[1]);
  await expect
    .poll(async () => ((await serviceVersion()) ?? 0) >= raisedAt, { timeout: 60_000 })
    .toBe(true);
  expect(await codes("acme", 3)).toEqual(["OK", "OK", "OVER_LIMIT"]);
  // Other values keep their rule's limit: hooli, 5 a day under the key alone.
  expect(await codes("hooli", 6)).toEqual(["OK", "OK", "OK", "OK", "OK", "OVER_LIMIT"]);
  // The raised value, explained from its row: the raise decides, on the rule's counter.
  await raises.getByRole("link", { name: "Explain" }).click();
  await expect(page.getByRole("textbox", { name: "Descriptors" })).toHaveValue("tenant=acme");
  await expect(page.getByTestId("explained-0")).toContainText("Raised for this value until");
  await expect(page.getByTestId("explained-0-now")).toHaveText("OVER_LIMIT");
  await page.goBack();

  // The rule's own edit form: a bad window is refused at the field, then a good edit saves.
  await expect(page.getByTestId("rule-no-backtest")).toContainText(
    "does not record its descriptor",
  );
  await page.getByLabel("Window (seconds)").fill("0");
  await page.getByLabel("Reason (required)").fill("acme gets a bigger plan");
  await page.getByRole("button", { name: "Save rule" }).click();
  await expect(page.getByTestId("rule-limit-window-error")).toContainText("window");
  await page.getByLabel("Window (seconds)").fill("86400");
  await page.getByLabel("Requests per window").fill("2");
  await page
    .getByLabel("Across a Redis failover")
    .selectOption({ label: "wait for a replica (never over the limit)" });
  await page.getByRole("button", { name: "Save rule" }).click();
  await expect(page.getByTestId("rule-edit-saved")).toBeVisible();
  await expect(page.getByTestId("rule-summary")).toContainText("2 per 86400 s");
  const ruleId = decodeURIComponent(new URL(page.url()).pathname.split("/").at(-1) ?? "");
  const stored = await page.request.get("/api/v1/descriptor-rules");
  expect(stored.status(), await stored.text()).toBe(200);
  const { rules } = (await stored.json()) as { rules: { id: string; durability?: string }[] };
  expect(rules.find((rule) => rule.id === ruleId)?.durability).toBe("replicated");

  // Explain a call of two descriptors: acme by its raised rule, hooli by the key alone, spent.
  await page.goto("/descriptor-rules");
  await page.getByRole("link", { name: "Explain a call" }).click();
  await page.getByLabel("Domain").fill(DOMAIN);
  await page.getByLabel("Descriptors").fill("tenant=acme\ntenant=hooli");
  await page.getByRole("button", { name: "Explain" }).click();
  await expect(page.getByTestId("explain-overall")).toHaveText("OVER_LIMIT");
  await expect(page.getByTestId("explained-0")).toContainText(`${DOMAIN}: tenant=acme`);
  await expect(page.getByTestId("explained-0")).toContainText("(raised)");
  await expect(page.getByTestId("explained-1")).toContainText(`${DOMAIN}: tenant`);
  await expect(page.getByTestId("explained-1-now")).toHaveText("OVER_LIMIT");
  expect(await codes("hooli", 1)).toEqual(["OVER_LIMIT"]);
});
