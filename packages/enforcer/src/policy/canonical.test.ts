import { describe, expect, it } from "vitest";
import { examplePolicy, examplePolicyInput } from "../testing/policy-factory";
import {
  canonicalJson,
  canonicalPolicy,
  sortPolicyDocument,
  writeCanonicalPolicy,
} from "./canonical";
import { type TPolicyDocumentInput, ZPolicyDocument } from "./schemas";

/** The same object with its keys inserted in reverse order, at every depth. */
function reverseKeys<T>(value: T): T {
  if (Array.isArray(value)) return value.map(reverseKeys) as T;
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value)
        .reverse()
        .map(([key, member]) => [key, reverseKeys(member)]),
    ) as T;
  }
  return value;
}

/** The example with every collection in reverse order and every object's keys reversed. */
function shuffledExample(): TPolicyDocumentInput {
  const input = examplePolicyInput();
  input.tiers.reverse();
  input.endpointClasses.reverse();
  for (const endpointClass of input.endpointClasses) endpointClass.match?.reverse();
  input.customers?.reverse();
  input.customerOverrides?.push({
    customerId: "acme",
    endpointClass: "reports",
    limit: { algorithm: "token-bucket", capacity: 1500, refillPerSec: 60 },
  });
  input.customerOverrides?.reverse();
  return reverseKeys(input);
}

describe("canonicalPolicy", () => {
  it("gives byte-identical exports for two insertion orders of the same policy", () => {
    const ordered = examplePolicyInput();
    ordered.customerOverrides?.push({
      customerId: "acme",
      endpointClass: "reports",
      limit: { algorithm: "token-bucket", capacity: 1500, refillPerSec: 60 },
    });
    const a = canonicalPolicy(ZPolicyDocument.parse(ordered));
    const b = canonicalPolicy(ZPolicyDocument.parse(shuffledExample()));
    expect(b).toBe(a);
  });

  it("parses back to the same policy and exports identically again", () => {
    const first = canonicalPolicy(ZPolicyDocument.parse(examplePolicyInput()));
    const second = canonicalPolicy(ZPolicyDocument.parse(JSON.parse(first)));
    expect(second).toBe(first);
  });

  it("lists identity first in each block, writes every default, and ends with a newline", () => {
    const text = canonicalPolicy(ZPolicyDocument.parse(examplePolicyInput()));
    expect(text.endsWith("}\n")).toBe(true);
    expect(text).toContain(
      [
        '  "tiers": [',
        "    {",
        '      "name": "enterprise",',
        '      "displayName": "Enterprise",',
        '      "limit": {',
        '        "algorithm": "token-bucket",',
        '        "capacity": 5000,',
        '        "mode": "enforce",',
        '        "onStoreFailure": "open",',
        '        "refillPerSec": 1000',
        "      }",
        "    },",
      ].join("\n"),
    );
    expect(text.indexOf('"schemaVersion"')).toBeLessThan(text.indexOf('"ceilings"'));
  });

  it("changes one line when one number changes, so diffs are readable", () => {
    const before = canonicalPolicy(ZPolicyDocument.parse(examplePolicyInput())).split("\n");
    const edited = examplePolicyInput();
    const pro = edited.tiers[1];
    if (pro?.limit.algorithm !== "token-bucket")
      throw new Error("expected pro to be a token bucket");
    pro.limit.capacity = 250;
    const after = canonicalPolicy(ZPolicyDocument.parse(edited)).split("\n");
    expect(after.length).toBe(before.length);
    const changed = after.filter((line, index) => line !== before[index]);
    expect(changed).toEqual(['        "capacity": 250,']);
  });
});

describe("canonicalJson", () => {
  it("sorts keys by code unit at every depth, including integer-like keys JavaScript would reorder", () => {
    expect(
      canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null }, "10": true, "9": false }),
    ).toBe('{"10":true,"9":false,"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
  });

  it("sorts by code unit, not by locale", () => {
    expect(canonicalJson({ b: 1, B: 2, é: 3, e: 4 })).toBe('{"B":2,"b":1,"e":4,"é":3}');
  });

  it.each([
    [{ value: Number.NaN }, /NaN/],
    [{ value: Number.POSITIVE_INFINITY }, /Infinity/],
    [{ value: undefined }, /undefined/],
    [[1n], /bigint/],
  ])("refuses what JSON cannot represent: %o", (value, pattern) => {
    expect(() => canonicalJson(value)).toThrow(pattern);
  });
});

describe("writeCanonicalPolicy", () => {
  it("writes the same bytes as canonicalPolicy, from the large collections in pages", async () => {
    const doc = examplePolicy((input) => {
      input.customers = [
        ...(input.customers ?? []),
        ...Array.from({ length: 25 }, (_, index) => ({
          id: `bulk-${String(index).padStart(3, "0")}`,
          displayName: `Bulk ${index}`,
          tier: "free",
        })),
      ];
      input.customerOverrides = [
        ...(input.customerOverrides ?? []),
        ...Array.from({ length: 25 }, (_, index) => ({
          customerId: `bulk-${String(index).padStart(3, "0")}`,
          endpointClass: null,
          limit: { algorithm: "token-bucket" as const, capacity: 100 + index, refillPerSec: 10 },
        })),
      ];
    });
    const sorted = sortPolicyDocument(doc);
    async function* pagesOf<T>(items: readonly T[], size: number) {
      for (let start = 0; start < items.length; start += size)
        yield items.slice(start, start + size);
    }
    for (const size of [1, 7, 1000]) {
      const chunks: string[] = [];
      await writeCanonicalPolicy(
        {
          document: doc,
          customers: pagesOf(sorted.customers, size),
          customerOverrides: pagesOf(sorted.customerOverrides, size),
        },
        (chunk) => chunks.push(chunk),
      );
      expect(chunks.join("")).toBe(canonicalPolicy(doc));
    }
  });

  it("writes empty collections as [] exactly as canonicalPolicy does", async () => {
    const doc = examplePolicy((input) => {
      input.customers = [];
      input.customerOverrides = [];
      input.incidentOverrides = [];
    });
    const chunks: string[] = [];
    const none = (async function* () {})();
    await writeCanonicalPolicy(
      { document: doc, customers: none, customerOverrides: (async function* () {})() },
      (chunk) => chunks.push(chunk),
    );
    expect(chunks.join("")).toBe(canonicalPolicy(doc));
  });
});
