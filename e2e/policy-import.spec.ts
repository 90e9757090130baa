/**
 * A large policy import against the real server (`npm start` on the production build):
 *
 * - a document larger than the copy of the body Next.js makes for proxy.ts (10 MB) reaches its
 *   route whole, because the import route is left out of the proxy's matcher
 *   (`routeHandlersOutsideProxy`), and is applied;
 * - it is parsed and validated in a child process (lib/api/read-policy-document.ts), so a request
 *   sent while the server works through it is answered before the import's answer. Order is
 *   asserted, never time.
 */
import { request as httpRequest } from "node:http";
import { expect, test } from "./fixtures";
import { BASE_URL } from "./run-env";
import { apiAs } from "./support/shared-sessions";

/** Customers with names long enough that `count` of them weigh about 100 bytes each. */
function bulkCustomers(count: number, tierOf: (index: number) => string) {
  return Array.from({ length: count }, (_, index) => ({
    id: `e2e-bulk-${index.toString(36).padStart(6, "0")}`,
    displayName: `Bulk customer number ${index} of the large import test`,
    tier: tierOf(index),
  }));
}

interface Answer {
  readonly status: number;
  readonly body: string;
}

/**
 * POSTs `body` to the import over a connection of its own. `sent` resolves once the whole body is
 * handed to the connection (the server has then read all but what the socket buffers hold),
 * `answered` with the server's answer.
 */
function postImport(
  body: string,
  headers: Record<string, string>,
): { sent: Promise<void>; answered: Promise<Answer> } {
  let onSent: () => void = () => {};
  const sent = new Promise<void>((resolve) => (onSent = resolve));
  const answered = new Promise<Answer>((resolve, reject) => {
    const request = httpRequest(
      `${BASE_URL}/api/v1/policy/import?reason=${encodeURIComponent("large import test")}`,
      {
        method: "POST",
        headers: {
          ...headers,
          "content-type": "application/json",
          "content-length": String(Buffer.byteLength(body)),
        },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () =>
          resolve({
            status: response.statusCode ?? 0,
            body: Buffer.concat(chunks).toString("utf8"),
          }),
        );
        response.on("error", reject);
      },
    );
    request.on("error", reject);
    request.end(body, onSent);
  });
  return { sent, answered };
}

test.describe("a large policy import", () => {
  test.setTimeout(240_000);

  test("a document over 10 MB reaches the import whole, past the proxy, and is applied", async () => {
    const admin = await apiAs("admin");
    try {
      const exported = await admin.get("/api/v1/policy/export");
      expect(exported.status()).toBe(200);
      const original = await exported.text();
      const document = JSON.parse(original) as { customers: unknown[] };
      const added = bulkCustomers(120_000, (index) => (index % 2 === 0 ? "free" : "pro"));
      const text = JSON.stringify({ ...document, customers: [...document.customers, ...added] });
      expect(Buffer.byteLength(text)).toBeGreaterThan(10 * 1024 * 1024);
      try {
        const imported = await admin.post("/api/v1/policy/import?reason=large%20import", {
          headers: { "content-type": "application/json" },
          data: text,
          timeout: 200_000,
        });
        expect(imported.status(), await imported.text()).toBe(200);
        expect((await imported.json()).summary.customers).toBe(
          document.customers.length + added.length,
        );
        const last = added.at(-1);
        const stored = await admin.get(`/api/v1/customers/${last?.id}`);
        expect(stored.status(), await stored.text()).toBe(200);
        expect((await stored.json()).customer).toMatchObject({ id: last?.id, tier: last?.tier });
      } finally {
        // The rest of the run expects the policy it started with.
        const restored = await admin.post("/api/v1/policy/import?reason=restore", {
          headers: { "content-type": "application/json" },
          data: original,
          timeout: 200_000,
        });
        expect(restored.status(), await restored.text()).toBe(200);
      }
    } finally {
      await admin.dispose();
    }
  });

  test("a request sent while a large import is parsed and validated is answered before it", async () => {
    const admin = await apiAs("admin");
    const viewer = await apiAs("viewer");
    try {
      const exported = await admin.get("/api/v1/policy/export");
      const document = JSON.parse(await exported.text()) as { customers: unknown[] };
      // The last customer on a tier that does not exist: a 400 naming it, and nothing written.
      const count = 300_000;
      const added = bulkCustomers(count, (index) =>
        index === count - 1 ? "no-such-tier" : "free",
      );
      const text = JSON.stringify({ ...document, customers: [...document.customers, ...added] });
      const auditBefore = await (await admin.get("/api/v1/audit?limit=1")).text();
      const cookie = (await admin.storageState()).cookies
        .map(({ name, value }) => `${name}=${value}`)
        .join("; ");

      const order: string[] = [];
      const importing = postImport(text, { cookie, origin: BASE_URL });
      const answered = importing.answered.then((answer) => {
        order.push("import");
        return answer;
      });
      await importing.sent;
      const other = await viewer.get("/api/v1/tiers");
      order.push("other request");
      expect(other.status()).toBe(200);
      const imported = await answered;

      expect(order).toEqual(["other request", "import"]);
      expect(imported.status, imported.body).toBe(400);
      const error = (JSON.parse(imported.body) as { error: { fieldErrors: { path: string }[] } })
        .error;
      expect(error.fieldErrors.map((field) => field.path)).toEqual([
        `customers[${document.customers.length + count - 1}].tier`,
      ]);
      expect(await (await admin.get("/api/v1/audit?limit=1")).text()).toBe(auditBefore);
    } finally {
      await admin.dispose();
      await viewer.dispose();
    }
  });
});
