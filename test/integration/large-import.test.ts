/**
 * A large policy import does not stop the console: its body is parsed and validated in a child
 * process as it streams in (lib/api/read-policy-document.ts), so a request sent while it runs is
 * answered before it finishes, and a problem deep in a large document is still reported by its
 * position and field. e2e/policy-import.spec.ts does the same against the real server.
 */
import { describe, expect, it } from "vitest";
import { examplePolicyForSeed } from "../../scripts/seed";
import { provideApiHarness } from "./helpers/api-harness";

const api = provideApiHarness({ withPolicy: true });

/** The example policy with `count` customers more, the last one on a tier that does not exist. */
function largeDocumentWithOneMistake(count: number): string {
  const document = examplePolicyForSeed(Date.now());
  const tiers = ["free", "pro", "enterprise"];
  const customers = Array.from({ length: count }, (_, index) => ({
    id: `bulk-${index.toString(36).padStart(6, "0")}`,
    displayName: `Bulk customer number ${index}`,
    tier: index === count - 1 ? "no-such-tier" : (tiers[index % 3] as string),
  }));
  return JSON.stringify({ ...document, customers: [...(document.customers ?? []), ...customers] });
}

describe("a large import", () => {
  it("lets a request sent while it runs be answered first, and names the position of its problem", async () => {
    const count = 200_000;
    const text = largeDocumentWithOneMistake(count);
    const admin = api.as("admin");
    const before = await api.fingerprint();
    const startedMs = Date.now();
    let importEndedMs: number | null = null;
    const importing = api
      .call("POST", "/api/v1/policy/import?reason=bulk", {
        as: { session: admin.session },
        rawBody: text,
      })
      .then((response) => {
        importEndedMs = Date.now();
        return response;
      });
    // Sent once the import has begun: it must not wait for the whole body to be parsed.
    await new Promise((resolve) => setImmediate(resolve));
    const other = await api.call("GET", "/api/v1/tiers", {
      as: { session: api.as("viewer").session },
    });
    const otherEndedMs = Date.now();
    expect(other.status).toBe(200);
    expect(importEndedMs).toBeNull();

    const imported = await importing;
    console.log(
      `${(text.length / 1024 / 1024).toFixed(1)} MiB import: answered in ${(importEndedMs ?? 0) - startedMs} ms; a request sent meanwhile in ${otherEndedMs - startedMs} ms`,
    );
    expect(imported.status).toBe(400);
    expect(imported.body.error.code).toBe("VALIDATION_FAILED");
    const customerIndex = (examplePolicyForSeed(0).customers ?? []).length + count - 1;
    expect(imported.body.error.fieldErrors).toEqual([
      expect.objectContaining({ path: `customers[${customerIndex}].tier` }),
    ]);
    expect(await api.fingerprint()).toEqual(before);
  }, 120_000);
});
