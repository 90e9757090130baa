import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import example from "./fixtures/example-policy.json";
import {
  canonicalPolicy,
  compileSnapshot,
  parsePolicyDocument,
  parseSnapshot,
  prepareSnapshot,
  resolveLimits,
} from "./index";

describe("the public entry point", () => {
  it("takes the example policy from a file to a decision's checks", () => {
    const parsed = parsePolicyDocument(example);
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    const published = JSON.stringify(
      compileSnapshot(parsed.value, { version: 1, compiledAt: "2025-06-02T00:00:00Z" }),
    );
    const received = parseSnapshot(published);
    if (!received.ok) throw new Error(JSON.stringify(received.errors));
    const resolution = resolveLimits(
      prepareSnapshot(received.value),
      { customerId: "globex", tier: "pro", method: "GET", path: "/v1/reports/7" },
      Date.parse("2025-06-02T12:00:00Z"),
      { trace: false },
    );
    expect(resolution.checks.map((check) => `${check.scope} ${check.bucket}`)).toEqual([
      "tier:pro account",
      "customer:globex/endpoint:reports endpoint:reports",
      "ceiling ceiling",
      "ceiling/endpoint:reports ceiling/endpoint:reports",
    ]);
    expect(resolution.cost).toBe(10);
  });

  it("exports the example in canonical form", () => {
    const parsed = parsePolicyDocument(example);
    if (!parsed.ok) throw new Error("expected the example to parse");
    expect(canonicalPolicy(parsed.value)).toContain('"id": "inc-2025-06-02-acme"');
  });

  it("keeps the module free of node:* imports, so it runs in edge runtimes and browsers", () => {
    const folder = fileURLToPath(new URL(".", import.meta.url));
    const sources = readdirSync(folder).filter(
      (file) => file.endsWith(".ts") && !file.endsWith(".test.ts"),
    );
    expect(sources.length).toBeGreaterThan(10);
    for (const file of sources) {
      expect(readFileSync(`${folder}${file}`, "utf8"), file).not.toMatch(/from "node:|require\(/);
    }
  });
});
