/**
 * An admin moves an envoyproxy/ratelimit file into the console: previews it, imports it, sees the
 * rules, and a rate-limit service process on the run's Redis answers Envoy's calls by them; one
 * descriptor value's rule is then raised and the service's answers change, with no restart.
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
import { apiAs } from "./support/shared-sessions";

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

  // Raise tenant=acme's rule to 3 a day; the counter continues (one spent).
  const api = await apiAs("admin");
  const list = await api.get("/api/v1/descriptor-rules");
  const { rules } = (await list.json()) as {
    rules: { id: string; version: number; descriptor: { value: string | null }[] }[];
  };
  const acme = rules.find((rule) => rule.descriptor[0]?.value === "acme");
  if (acme === undefined) throw new Error("no acme rule");
  const raised = await api.patch(`/api/v1/descriptor-rules/${acme.id}`, {
    data: {
      expectedVersion: acme.version,
      limit: { algorithm: "fixed-window", limit: 3, windowMs: 86_400_000 },
      reason: "acme's launch day",
    },
  });
  expect(raised.status(), await raised.text()).toBe(200);
  const { policyVersion } = (await raised.json()) as { policyVersion: number };
  await expect
    .poll(async () => ((await serviceVersion()) ?? 0) >= policyVersion, { timeout: 60_000 })
    .toBe(true);
  expect(await codes("acme", 3)).toEqual(["OK", "OK", "OVER_LIMIT"]);

  await page.reload();
  await expect(page.getByTestId(`rule-${acme.id}`)).toContainText("3 per 86400 s");
  await api.dispose();
});
