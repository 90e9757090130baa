import { describe, expect, it } from "vitest";
import { examplePolicyInput } from "../testing/policy-factory";
import { canonicalJson, canonicalPolicy } from "./canonical";
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
