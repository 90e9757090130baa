/**
 * An installation with two regions (REGIONS), each with a redis-server of this spec's own kept on
 * disk, a worker and a console of its own on a database of its own (the run's shared worker leads
 * the shared database). With us-west's Redis stopped, an operator makes a change and sees it
 * applied in eu-west and pending in us-west; once us-west's Redis returns, the same page shows it
 * applied there too, and the fleet filter names both regions with the total.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { TEST_APPLICATION_ROLE, urlForRole } from "../scripts/db/app-role";
import { dropDatabase } from "../scripts/db/databases";
import { expect, test } from "./fixtures";
import { E2E_ACCOUNTS, E2E_DATABASE_URL, E2E_PORT, runEnvironment } from "./run-env";
import { type OwnConsole, startOwnConsole } from "./support/own-console";

const ROOT = path.resolve(import.meta.dirname, "..");
const CONSOLE_PORT = E2E_PORT + 30;

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  server.close();
  await once(server, "close");
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

/** A redis-server that keeps every write in its append-only file, so a restart keeps the policy. */
class DurableRedis {
  #child: ChildProcess | undefined;
  readonly dir = mkdtempSync(path.join(tmpdir(), "lp-e2e-region-"));
  constructor(readonly port: number) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}/0`;
  }

  async start(): Promise<void> {
    this.#child = spawn(
      "redis-server",
      ["--port", String(this.port), "--bind", "127.0.0.1", "--save", ""].concat([
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--dir",
        this.dir,
      ]),
      { stdio: "ignore" },
    );
    await expect
      .poll(
        () => {
          try {
            return execFileSync("redis-cli", ["-p", String(this.port), "ping"])
              .toString()
              .trim();
          } catch {
            return "";
          }
        },
        { message: `redis-server on ${this.port} answers`, timeout: 30_000 },
      )
      .toBe("PONG");
  }

  async stop(): Promise<void> {
    const child = this.#child;
    this.#child = undefined;
    if (child === undefined || child.exitCode !== null) return;
    const exited = once(child, "exit");
    child.kill("SIGTERM");
    await exited;
  }
}

const ownerUrl = (() => {
  const url = new URL(E2E_DATABASE_URL);
  url.pathname = `${url.pathname}_rg`;
  return url.toString();
})();
const appUrl = urlForRole(ownerUrl, TEST_APPLICATION_ROLE);
let servers: { name: string; redis: DurableRedis }[] = [];
let worker: ChildProcess | undefined;
let consoleServer: OwnConsole | undefined;

function regionEnv(): Record<string, string> {
  return {
    DATABASE_URL: appUrl,
    DATABASE_OWNER_URL: ownerUrl,
    REGIONS: JSON.stringify(servers.map((entry) => ({ name: entry.name, url: entry.redis.url }))),
  };
}

function runScript(args: string[]): void {
  execFileSync(process.execPath, ["--conditions=react-server", "--import", "tsx", ...args], {
    cwd: ROOT,
    env: { ...runEnvironment(), ...regionEnv() },
    stdio: ["ignore", "ignore", "inherit"],
  });
}

test.describe("regions", () => {
  test.describe.configure({ timeout: 180_000 });

  test.beforeAll(async () => {
    test.setTimeout(180_000);
    servers = [
      { name: "eu-west", redis: new DurableRedis(await freePort()) },
      { name: "us-west", redis: new DurableRedis(await freePort()) },
    ];
    await Promise.all(servers.map((entry) => entry.redis.start()));
    runScript(["scripts/db/migrate.ts", "deploy"]);
    runScript(["scripts/seed.ts"]);
    runScript(["e2e/support/create-accounts.ts"]);
    worker = spawn(
      process.execPath,
      ["--conditions=react-server", "--import", "tsx", "scripts/worker.ts"],
      {
        cwd: ROOT,
        env: { ...runEnvironment(), ...regionEnv() },
        stdio: ["ignore", "ignore", "inherit"],
      },
    );
    consoleServer = await startOwnConsole(CONSOLE_PORT, regionEnv(), 120_000);
  });

  test.afterAll(async () => {
    await consoleServer?.stop();
    if (worker !== undefined && worker.exitCode === null) {
      const exited = once(worker, "exit");
      worker.kill("SIGTERM");
      await exited;
    }
    for (const entry of servers) {
      await entry.redis.stop();
      rmSync(entry.redis.dir, { recursive: true, force: true });
    }
    await dropDatabase(ownerUrl);
  });

  test("an operator sees a change pending in the region whose Redis is down, then applied", async ({
    page,
  }) => {
    const base = consoleServer?.url ?? "";
    const account = E2E_ACCOUNTS.admin;
    await page.goto(`${base}/sign-in`);
    await page.getByLabel("Email").fill(account.email);
    await page.getByLabel("Password").fill(account.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(page.getByTestId("who")).toContainText(account.name);

    // Both regions have the seeded policy before anything is stopped.
    await expect(page.getByTestId("propagation-sentence")).toHaveText(
      "Applied in every region (eu-west and us-west).",
      { timeout: 30_000 },
    );
    await expect(page.getByTestId("region-filter")).toContainText("in total");
    await expect(page.getByTestId("global-shares")).toContainText("No limit is global");

    const usWest = servers[1]?.redis;
    if (usWest === undefined) throw new Error("no us-west");
    await usWest.stop();
    const created = await page.request.post(`${base}/api/v1/tiers`, {
      headers: { origin: base },
      data: {
        name: "regional-e2e",
        limit: { algorithm: "token-bucket", capacity: 20, refillPerSec: 1 },
        reason: "e2e: a change while us-west is down",
      },
    });
    expect(created.status(), await created.text()).toBe(201);
    const { auditEntryId, policyVersion } = (await created.json()) as {
      auditEntryId: string;
      policyVersion: number;
    };

    await page.goto(`${base}/audit?entry=${auditEntryId}`);
    const panel = page.getByTestId("propagation");
    await expect(panel).toHaveAttribute("data-version", String(policyVersion));
    const region = (name: string) => panel.locator(`[data-region="${name}"]`);
    await expect(async () => {
      await page.reload();
      await expect(region("eu-west")).toContainText("applied", { timeout: 1_000 });
    }).toPass({ timeout: 30_000 });
    await expect(region("us-west")).toContainText("pending");
    await expect(page.getByTestId("propagation-sentence")).toHaveText(
      /^Applied in eu-west, us-west pending since \d\d:\d\d UTC\.$/,
    );

    await usWest.start();
    await expect(async () => {
      await page.reload();
      await expect(region("us-west")).toContainText("applied", { timeout: 1_000 });
    }).toPass({ timeout: 60_000 });
    await expect(page.getByTestId("propagation-sentence")).toHaveText(
      "Applied in every region (eu-west and us-west).",
    );

    // Marked global, the tier is divided between the regions: the overview shows each region's
    // share as the worker writes it to that region's Redis.
    const marked = await page.request.patch(`${base}/api/v1/tiers/regional-e2e`, {
      headers: { origin: base },
      data: {
        expectedVersion: 1,
        limit: { algorithm: "token-bucket", capacity: 20, refillPerSec: 1, global: true },
        reason: "e2e: one budget for both regions",
      },
    });
    expect(marked.status(), await marked.text()).toBe(200);
    const row = page.getByTestId("global-share-tier:regional-e2e");
    await expect(async () => {
      await page.goto(`${base}/`);
      await expect(row.locator("td")).toHaveText([/^\d+(\.\d)? %$/, /^\d+(\.\d)? %$/], {
        timeout: 1_000,
      });
    }).toPass({ timeout: 30_000 });
  });
});
