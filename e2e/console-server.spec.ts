/**
 * The console's HTTP edge against the real server (`npm start`, scripts/console.ts), as an
 * attacker and as an operator in an outage would meet it (issue 14):
 *
 * - every route with a path parameter refuses malformed percent-encoding with a 400 in the API's
 *   error shape; unknown paths under /api are a JSON 404; undefined methods a JSON 405 with
 *   `Allow`; routes without query parameters refuse any; and none of it writes anything;
 * - every page and API response carries the framing, sniffing and referrer headers, and HSTS only
 *   when the request arrived over https as a trusted proxy says;
 * - the sign-in limit counts the connection's address unless a proxy is trusted, so a varied or
 *   forged `X-Forwarded-For` neither dodges it nor locks anyone else out;
 * - with Postgres unreachable (a console pointed at a closed port, or at a server that accepts
 *   connections and never answers), the API answers 503 DATABASE_UNAVAILABLE with Retry-After,
 *   pages say the database is unreachable, and /status and /sign-in still render.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { createServer as createNetServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import type { APIRequestContext } from "@playwright/test";
import pg from "pg";
import { expect, test } from "./fixtures";
import { BASE_URL, E2E_DATABASE_URL, E2E_PORT, E2E_REDIS_PREFIX } from "./run-env";
import { type OwnConsole, startOwnConsole } from "./support/own-console";

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;
const MALFORMED = ["%ZZ", "%E0%A4%A", "%C0%AF"] as const;

type OpenApiDocument = {
  paths: Record<string, Record<string, { parameters?: { in: string; name: string }[] }>>;
};

async function openApi(request: APIRequestContext): Promise<OpenApiDocument> {
  const response = await request.get("/api/v1/openapi.json");
  expect(response.status()).toBe(200);
  return (await response.json()) as OpenApiDocument;
}

/** Rows and versions of what a request could write: equal before and after means nothing was. */
async function writtenState(): Promise<Record<string, string>> {
  const client = new pg.Client({ connectionString: E2E_DATABASE_URL });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string; value: string }>(`
      SELECT 'audit' AS name, count(*)::text AS value FROM "AuditEntry"
      UNION ALL SELECT 'versions', count(*)::text FROM "PolicyVersion"
      UNION ALL SELECT 'tiers', coalesce(sum(version), 0)::text FROM "Tier"
      UNION ALL SELECT 'operators', coalesce(sum(version), 0)::text FROM "Operator"
      UNION ALL SELECT 'tokens', coalesce(sum(version), 0)::text FROM "ApiToken"`);
    return Object.fromEntries(rows.map((row) => [row.name, row.value]));
  } finally {
    await client.end();
  }
}

function expectApiError(body: unknown, code: string): void {
  expect(body).toMatchObject({
    error: {
      code,
      message: expect.any(String),
      fieldErrors: expect.any(Array),
      requestId: expect.any(String),
    },
  });
}

test.describe("the API's error paths", () => {
  test("malformed percent-encoding on every route with a path parameter is a 400, and writes nothing", async ({
    page,
    signIn,
  }) => {
    await signIn("admin");
    const document = await openApi(page.request);
    const before = await writtenState();
    let checked = 0;
    for (const [template, operations] of Object.entries(document.paths)) {
      if (!template.includes("{")) continue;
      for (const method of Object.keys(operations).map((m) => m.toUpperCase())) {
        for (const bad of MALFORMED) {
          const url = template.replace(/\{\w+\}/g, bad);
          const response = await page.request.fetch(url, {
            method,
            headers: { origin: BASE_URL, "content-type": "application/json" },
            data: method === "GET" || method === "DELETE" ? undefined : "{}",
          });
          expect(response.status(), `${method} ${url}`).toBe(400);
          expect(response.headers()["content-type"]).toContain("application/json");
          const body = await response.json();
          expectApiError(body, "MALFORMED_URL");
          expect(response.headers()["x-request-id"]).toBe(body.error.requestId);
          checked += 1;
        }
      }
    }
    expect(checked).toBeGreaterThanOrEqual(3 * 20);
    // A console page with a malformed path: a 400 page, not Next.js's bare 500.
    const consolePage = await page.request.get("/customers/%C0%AF");
    expect(consolePage.status()).toBe(400);
    expect(consolePage.headers()["content-type"]).toContain("text/html");
    expect(await consolePage.text()).toContain("Bad address");
    expect(await writtenState()).toEqual(before);
  });

  test("unknown paths under /api are a JSON 404; undefined methods a JSON 405 with Allow", async ({
    page,
    signIn,
  }) => {
    await signIn("admin");
    for (const url of [
      "/api",
      "/api/nope",
      "/api/v1/tierz",
      "/api/v1/tiers/free/extra",
      "/api/v2/tiers",
    ]) {
      for (const method of ["GET", "POST"]) {
        const response = await page.request.fetch(url, {
          method,
          headers: { origin: BASE_URL },
        });
        expect(response.status(), `${method} ${url}`).toBe(404);
        expectApiError(await response.json(), "NOT_FOUND");
      }
    }
    const document = await openApi(page.request);
    const before = await writtenState();
    for (const [template, operations] of Object.entries(document.paths)) {
      const url = template.replace(/\{\w+\}/g, "x");
      const defined = Object.keys(operations).map((m) => m.toUpperCase());
      const allow = [...defined, ...(defined.includes("GET") ? ["HEAD"] : []), "OPTIONS"];
      for (const method of METHODS.filter((m) => !defined.includes(m))) {
        const response = await page.request.fetch(url, {
          method,
          headers: { origin: BASE_URL, "content-type": "application/json" },
          data: method === "GET" || method === "DELETE" ? undefined : "{}",
        });
        expect(response.status(), `${method} ${url}`).toBe(405);
        expect(response.headers().allow?.split(", ").sort()).toEqual([...allow].sort());
        expectApiError(await response.json(), "METHOD_NOT_ALLOWED");
      }
      const options = await page.request.fetch(url, { method: "OPTIONS" });
      expect(options.status()).toBe(204);
      expect(options.headers().allow?.split(", ").sort()).toEqual([...allow].sort());
    }
    const health = await page.request.fetch("/api/health", { method: "DELETE" });
    expect(health.status()).toBe(405);
    expect(health.headers().allow).toBe("GET, HEAD, OPTIONS");
    expect(await writtenState()).toEqual(before);
  });

  test("a route without query parameters refuses any, naming it", async ({ page, signIn }) => {
    await signIn("admin");
    const document = await openApi(page.request);
    let checked = 0;
    for (const [template, operations] of Object.entries(document.paths)) {
      const get = operations.get;
      if (template.includes("{") || get === undefined) continue;
      if ((get.parameters ?? []).some((parameter) => parameter.in === "query")) continue;
      const response = await page.request.get(`${template}?bogus=1`);
      expect(response.status(), template).toBe(400);
      const body = await response.json();
      expectApiError(body, "VALIDATION_FAILED");
      expect(body.error.fieldErrors).toEqual([
        { path: "query.bogus", message: expect.stringContaining("unknown query parameter") },
      ]);
      checked += 1;
    }
    expect(checked).toBeGreaterThanOrEqual(4);
  });
});

const PAGES = [
  "/",
  "/policies",
  "/policies/settings",
  "/policies/tiers/free",
  "/customers",
  "/overrides",
  "/incidents/new",
  "/audit",
  "/dry-run",
  "/status",
  "/sign-in",
  "/no-such-page",
] as const;

function expectSecurityHeaders(headers: Record<string, string>, where: string): void {
  expect(headers["content-security-policy"], where).toContain("frame-ancestors 'none'");
  expect(headers["x-frame-options"], where).toBe("DENY");
  expect(headers["x-content-type-options"], where).toBe("nosniff");
  expect(headers["referrer-policy"], where).toBe("same-origin");
}

test.describe("security headers", () => {
  test("every page and the API forbid framing and sniffing; HSTS only over https", async ({
    page,
    signIn,
  }) => {
    await signIn("admin");
    for (const path of [...PAGES, "/api/v1/tiers", "/api/health"]) {
      const response = await page.request.get(path, { maxRedirects: 0 });
      expectSecurityHeaders(response.headers(), path);
      expect(response.headers()["strict-transport-security"], path).toBeUndefined();
    }
    // The shared console trusts one proxy (playwright.config.ts): its X-Forwarded-Proto counts.
    const overHttps = await page.request.get("/status", {
      headers: { "x-forwarded-proto": "https" },
    });
    expect(overHttps.headers()["strict-transport-security"]).toBe("max-age=31536000");
  });

  test("HSTS over a TLS connection to the console itself; a forged X-Forwarded-Proto gets none", async ({
    playwright,
  }) => {
    const dir = mkdtempSync(path.join(tmpdir(), "lp-tls-"));
    const [cert, key] = [path.join(dir, "cert.pem"), path.join(dir, "key.pem")];
    execFileSync(
      "openssl",
      [
        ...["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"],
        ...["-keyout", key, "-out", cert, "-subj", "/CN=127.0.0.1"],
        ...["-addext", "subjectAltName=IP:127.0.0.1"],
      ],
      { stdio: "ignore" },
    );
    const tlsConsole = await startOwnConsole(E2E_PORT + 34, {
      CONSOLE_TLS_CERT_FILE: cert,
      CONSOLE_TLS_KEY_FILE: key,
    });
    const plainConsole = await startOwnConsole(E2E_PORT + 35, {});
    const client = await playwright.request.newContext({ ignoreHTTPSErrors: true });
    try {
      expect(tlsConsole.output()).toContain(`listening on https://127.0.0.1:${E2E_PORT + 34}`);
      for (const page of ["/status", "/sign-in", "/api/health"]) {
        const response = await client.get(`https://127.0.0.1:${E2E_PORT + 34}${page}`);
        expectSecurityHeaders(response.headers(), page);
        expect(response.headers()["strict-transport-security"], page).toBe("max-age=31536000");
      }
      // No proxy is trusted by default: the client's own X-Forwarded-Proto says nothing.
      const forged = await client.get(`${plainConsole.url}/status`, {
        headers: { "x-forwarded-proto": "https" },
      });
      expect(forged.headers()["strict-transport-security"]).toBeUndefined();
    } finally {
      await client.dispose();
      await Promise.all([tlsConsole.stop(), plainConsole.stop()]);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a browser refuses to show the console in another site's frame", async ({ page }) => {
    const blocked: string[] = [];
    page.on("console", (message) => {
      if (/frame-ancestors|Refused to (display|frame)/i.test(message.text())) {
        blocked.push(message.text());
      }
    });
    await page.setContent(`<iframe id="victim" src="${BASE_URL}/sign-in"></iframe>`);
    await expect.poll(() => blocked.length, { timeout: 15_000 }).toBeGreaterThan(0);
    const frame = page.frames().find((f) => f !== page.mainFrame());
    expect(await frame?.getByRole("heading", { name: "Sign in" }).count()).toBe(0);
    expect(await frame?.getByLabel("Password").count()).toBe(0);
  });
});

/** A sign-in attempt from a loopback address of our choosing (Linux routes all of 127/8). */
function signInFrom(
  consoleUrl: string,
  localAddress: string,
  forwardedFor: string | null,
  email: string,
): Promise<number> {
  const url = new URL("/api/v1/auth/sign-in", consoleUrl);
  const body = JSON.stringify({ email, password: "not the password" });
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      url,
      {
        method: "POST",
        localAddress,
        agent: false,
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
          ...(forwardedFor === null ? {} : { "x-forwarded-for": forwardedFor }),
        },
      },
      (response) => {
        response.resume();
        response.on("end", () => resolve(response.statusCode ?? 0));
      },
    );
    outgoing.on("error", reject);
    outgoing.end(body);
  });
}

function countStatuses(statuses: readonly number[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const status of statuses) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
}

test.describe("the sign-in limit's client address", () => {
  test.setTimeout(180_000);
  const consoles: OwnConsole[] = [];
  test.afterAll(async () => {
    await Promise.all(consoles.map((c) => c.stop()));
  });

  test("no proxy trusted (the default): X-Forwarded-For neither dodges the limit nor locks out its victim", async () => {
    const own = await startOwnConsole(E2E_PORT + 30, {
      REDIS_KEY_PREFIX: `${E2E_REDIS_PREFIX}trust0:`,
    });
    consoles.push(own);
    // 30 simultaneous attempts from 127.0.0.2, each for another account: 25 naming another
    // address each, 5 forging the victim's (127.0.0.3). The limit is checked before any password
    // is hashed, all within a moment (it refills 1 per 10 s), so the counts are exact.
    const statuses = await Promise.all([
      ...Array.from({ length: 25 }, (_, index) =>
        signInFrom(own.url, "127.0.0.2", `203.0.113.${index + 1}`, `nobody-${index}@e2e.test`),
      ),
      ...Array.from({ length: 5 }, (_, index) =>
        signInFrom(own.url, "127.0.0.2", "127.0.0.3", `forger-${index}@e2e.test`),
      ),
    ]);
    expect(countStatuses(statuses)).toEqual({ 401: 20, 429: 10 });
    // The victim's own attempt is counted on its own address, untouched by the forgeries.
    expect(await signInFrom(own.url, "127.0.0.3", null, "victim@e2e.test")).toBe(401);
  });

  test("one trusted proxy: the address it appended is the client", async () => {
    const own = await startOwnConsole(E2E_PORT + 31, {
      REDIS_KEY_PREFIX: `${E2E_REDIS_PREFIX}trust1:`,
      CONSOLE_TRUST_PROXY: "1",
    });
    consoles.push(own);
    const sameClient = await Promise.all(
      Array.from({ length: 25 }, (_, index) =>
        signInFrom(
          own.url,
          "127.0.0.2",
          `6.6.6.${index}, 198.51.100.7`,
          `client-${index}@e2e.test`,
        ),
      ),
    );
    expect(countStatuses(sameClient)).toEqual({ 401: 20, 429: 5 });
    // Another client behind the same proxy is counted on its own.
    expect(await signInFrom(own.url, "127.0.0.2", "198.51.100.8", "other@e2e.test")).toBe(401);
  });
});

/**
 * A Postgres that accepts connections and never answers (a hung server, a partition), on `port`:
 * it reads and holds every socket until stopped.
 */
async function startHungPostgres(port: number): Promise<{ stop(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createNetServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", () => resolve()));
  return {
    async stop() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

for (const outage of ["refused", "hung"] as const) {
  test.describe(`Postgres unreachable (${outage})`, () => {
    test.setTimeout(outage === "hung" ? 240_000 : 120_000);
    let own: OwnConsole | null = null;
    let hung: { stop(): Promise<void> } | null = null;
    const session = "A".repeat(43);
    const token = `lp_abcdefgh_${"B".repeat(43)}`;
    const consolePort = outage === "refused" ? E2E_PORT + 32 : E2E_PORT + 36;
    const databasePort = outage === "refused" ? E2E_PORT + 33 : E2E_PORT + 37;

    test.beforeAll(async () => {
      // refused: a port where nothing listens (the shared Postgres is never stopped); hung: a
      // server that accepts and never answers.
      if (outage === "hung") hung = await startHungPostgres(databasePort);
      own = await startOwnConsole(consolePort, {
        DATABASE_URL: `postgresql://postgres@127.0.0.1:${databasePort}/limitplane`,
        REDIS_KEY_PREFIX: `${E2E_REDIS_PREFIX}nodb-${outage}:`,
      });
    });
    test.afterAll(async () => {
      await own?.stop();
      await hung?.stop();
    });

    test("the API answers 503 DATABASE_UNAVAILABLE with Retry-After, to tokens and sessions", async ({
      request,
    }) => {
      const url = own?.url ?? "";
      for (const [method, path] of [
        ["GET", "/api/v1/tiers"],
        ["GET", "/api/v1/audit"],
        ["POST", "/api/v1/incidents"],
      ] as const) {
        const credentials: Record<string, string>[] = [
          { authorization: `Bearer ${token}` },
          { cookie: `lp_session=${session}`, origin: url },
        ];
        for (const headers of credentials) {
          const response = await request.fetch(`${url}${path}`, {
            method,
            headers: { ...headers, "content-type": "application/json" },
            data: method === "POST" ? "{}" : undefined,
          });
          expect(response.status(), `${method} ${path}`).toBe(503);
          expect(response.headers()["retry-after"]).toBe("5");
          expectApiError(await response.json(), "DATABASE_UNAVAILABLE");
        }
      }
      expect(own?.output()).not.toContain("unhandled error");
    });

    test("pages say the database is unreachable; /status and /sign-in render", async ({
      page,
      context,
    }) => {
      const url = own?.url ?? "";
      await context.addCookies([{ name: "lp_session", value: session, url }]);
      for (const path of ["/", "/policies", "/customers", "/audit"]) {
        const startedAt = Date.now();
        await page.goto(`${url}${path}`);
        console.log(`Postgres ${outage}: ${path} answered in ${Date.now() - startedAt} ms`);
        await expect(page.getByText("The database is unreachable").first(), path).toBeVisible();
      }
      await page.screenshot({
        path: test.info().outputPath(`database-${outage}-page.png`),
        fullPage: true,
      });
      await page.goto(`${url}/status`);
      await expect(page.getByRole("heading", { name: "Status", level: 1 })).toBeVisible();
      await expect(page.getByTestId("postgres-state")).toHaveText(/Unreachable/);
      await expect(page.getByTestId("service-postgres")).toContainText(
        outage === "refused" ? "cannot connect" : /cannot connect|timed out/,
      );
      await page.goto(`${url}/sign-in`);
      await expect(page.getByRole("heading", { name: "Sign in", level: 1 })).toBeVisible();
      await expect(page.getByTestId("database-unreachable")).toBeVisible();
      await expect(page.getByLabel("Email")).toBeVisible();
      // A sign-in that fails on the console's side shows the request id its message asks to quote,
      // the one the server answered with (and logged under).
      await page.getByLabel("Email").fill("someone@e2e.test");
      await page.getByLabel("Password").fill("any password at all");
      const [answer] = await Promise.all([
        page.waitForResponse((response) => response.url().endsWith("/api/v1/auth/sign-in")),
        page.getByRole("button", { name: "Sign in" }).click(),
      ]);
      expect(answer.status()).toBe(503);
      const requestId = answer.headers()["x-request-id"] ?? "";
      expect(requestId).not.toBe("");
      await expect(page.getByTestId("sign-in-request-id")).toHaveText(requestId);
      await expect(page.locator(".field-error")).toContainText(`Request id: ${requestId}`);
    });
  });
}
