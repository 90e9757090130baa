import { describe, expect, it } from "vitest";
import { examplePolicy, examplePolicyInput, exampleSnapshot } from "../testing/policy-factory";
import { canonicalJson } from "./canonical";
import { formatFieldPath } from "./errors";
import { resolveLimits } from "./resolve";
import { type TSnapshot, ZPolicyDocument } from "./schemas";
import {
  compileSnapshot,
  computeSnapshotChecksum,
  isNewerSnapshot,
  parseSnapshot,
} from "./snapshot";

const OPTIONS = { version: 12, compiledAt: "2025-06-02T10:00:00Z" };

/** The snapshot's JSON with every object's keys reversed: same content, other byte order. */
function reversedJson(value: unknown): string {
  const reverse = (item: unknown): unknown => {
    if (Array.isArray(item)) return item.map(reverse);
    if (item !== null && typeof item === "object") {
      return Object.fromEntries(
        Object.entries(item)
          .reverse()
          .map(([key, member]) => [key, reverse(member)]),
      );
    }
    return item;
  };
  return JSON.stringify(reverse(value));
}

function errorsOf(input: unknown): string[] {
  const result = parseSnapshot(input);
  return result.ok
    ? []
    : result.errors.map((error) => `${formatFieldPath(error.path)}: ${error.message}`);
}

describe("compileSnapshot", () => {
  it("holds what an enforcer needs and nothing else", () => {
    const snapshot = compileSnapshot(examplePolicy(), OPTIONS);
    expect(Object.keys(snapshot).sort()).toEqual([
      "checksum",
      "compiledAt",
      "policy",
      "schemaVersion",
      "version",
    ]);
    expect(Object.keys(snapshot.policy).sort()).toEqual([
      "ceilings",
      "customerOverrides",
      "defaultEndpointClass",
      "defaultTier",
      "dryRunCandidates",
      "endpointClasses",
      "incidentOverrides",
      "tiers",
    ]);
    const text = JSON.stringify(snapshot);
    for (const absent of [
      "Acme Corporation",
      "displayName",
      "owner",
      "reason",
      "ticketUrl",
      "guardrails",
      "initech",
    ]) {
      expect(text).not.toContain(absent);
    }
    expect(snapshot.policy.incidentOverrides).toEqual([
      {
        id: "inc-2025-06-02-acme",
        customerId: "acme",
        endpointClass: null,
        factor: 3,
        limit: null,
        startsAt: "2025-06-02T09:00:00.000Z",
        expiresAt: "2025-06-02T21:00:00.000Z",
      },
    ]);
    expect(snapshot).toMatchObject({
      schemaVersion: 1,
      version: 12,
      compiledAt: "2025-06-02T10:00:00.000Z",
    });
  });

  it("leaves out incidents that expired before it was compiled", () => {
    const snapshot = compileSnapshot(examplePolicy(), {
      version: 13,
      compiledAt: "2025-06-02T21:00:00Z",
    });
    expect(snapshot.policy.incidentOverrides).toEqual([]);
  });

  it("gives the same checksum whatever order the document was built in", () => {
    const reordered = examplePolicyInput();
    reordered.tiers.reverse();
    reordered.endpointClasses.reverse();
    reordered.customers?.reverse();
    const a = compileSnapshot(examplePolicy(), OPTIONS);
    const b = compileSnapshot(ZPolicyDocument.parse(JSON.parse(reversedJson(reordered))), OPTIONS);
    expect(b.checksum).toBe(a.checksum);
    expect(canonicalJson(b)).toBe(canonicalJson(a));
  });

  it("changes the checksum when the content, the version or the time changes", () => {
    const a = compileSnapshot(examplePolicy(), OPTIONS);
    expect(compileSnapshot(examplePolicy(), { ...OPTIONS, version: 13 }).checksum).not.toBe(
      a.checksum,
    );
    expect(
      compileSnapshot(examplePolicy(), { ...OPTIONS, compiledAt: "2025-06-02T10:00:01Z" }).checksum,
    ).not.toBe(a.checksum);
    const edited = examplePolicy((input) => {
      input.defaultTier = "pro";
    });
    expect(compileSnapshot(edited, OPTIONS).checksum).not.toBe(a.checksum);
  });

  it("refuses a version or time the publisher got wrong", () => {
    expect(() => compileSnapshot(examplePolicy(), { ...OPTIONS, version: 0 })).toThrow(RangeError);
    expect(() => compileSnapshot(examplePolicy(), { ...OPTIONS, version: 1.5 })).toThrow(
      RangeError,
    );
    expect(() => compileSnapshot(examplePolicy(), { ...OPTIONS, compiledAt: "soon" })).toThrow(
      RangeError,
    );
  });
});

describe("parseSnapshot", () => {
  const snapshot = compileSnapshot(examplePolicy(), OPTIONS);

  it("accepts what compileSnapshot produced, as JSON text or as a value, in any key order", () => {
    expect(parseSnapshot(JSON.stringify(snapshot))).toEqual({ ok: true, value: snapshot });
    expect(parseSnapshot(structuredClone(snapshot))).toEqual({ ok: true, value: snapshot });
    expect(parseSnapshot(reversedJson(snapshot))).toEqual({ ok: true, value: snapshot });
  });

  it("resolves the same after a round trip through JSON", () => {
    const parsed = parseSnapshot(JSON.stringify(snapshot));
    if (!parsed.ok) throw new Error("expected the snapshot to parse");
    const request = { customerId: "acme", tier: "enterprise", endpointClass: "reports" };
    const at = Date.parse("2025-06-02T12:00:00Z");
    expect(resolveLimits(parsed.value, request, at).checks).toEqual(
      resolveLimits(snapshot, request, at).checks,
    );
  });

  it("refuses a snapshot whose content was changed after compiling", () => {
    const tampered: TSnapshot = structuredClone(snapshot);
    const tier = tampered.policy.tiers[0];
    if (tier?.limit.algorithm !== "token-bucket") throw new Error("expected a token bucket");
    tier.limit.capacity += 1;
    expect(errorsOf(tampered)).toEqual([
      expect.stringMatching(
        /^checksum: checksum [0-9a-f]{64} does not match the content \([0-9a-f]{64}\): the snapshot was altered/,
      ),
    ]);
  });

  it("refuses a version raised without recomputing the checksum", () => {
    expect(errorsOf({ ...snapshot, version: snapshot.version + 1 })).toHaveLength(1);
  });

  it.each<
    [
      string,
      (value: Record<string, unknown> & { policy: Record<string, unknown> }) => unknown,
      string,
    ]
  >([
    [
      "truncated JSON",
      () => JSON.stringify(snapshot).slice(0, 100),
      "(root): the snapshot is not valid JSON",
    ],
    [
      "not an object",
      () => [],
      "(root): expected an object with the fields: schemaVersion, version",
    ],
    [
      "a later format",
      (value) => ({ ...value, schemaVersion: 2 }),
      "schemaVersion: schemaVersion must be 1: this enforcer reads snapshot format 1 only",
    ],
    [
      "a fractional version",
      (value) => ({ ...value, version: 3.5 }),
      "version: version must be a whole number, not 3.5",
    ],
    [
      "a malformed checksum",
      (value) => ({ ...value, checksum: "abc" }),
      "checksum: checksum must be 64 lowercase hexadecimal characters",
    ],
    [
      "a local time",
      (value) => ({ ...value, compiledAt: "2025-06-02T10:00:00+02:00" }),
      "compiledAt: must be a UTC instant in the form 2025-01-31T14:00:00.000Z",
    ],
    [
      "a missing policy",
      ({ policy: _, ...rest }) => rest,
      "policy: expected an object with the fields",
    ],
    [
      "an unknown field",
      (value) => ({ ...value, publishedBy: "x" }),
      'publishedBy: unknown field "publishedBy"',
    ],
    [
      "a customer registry",
      (value) => ({ ...value, policy: { ...value.policy, customers: [] } }),
      'policy.customers: unknown field "customers"',
    ],
    [
      "a limit without its failure policy",
      (value) => ({
        ...value,
        policy: {
          ...value.policy,
          ceilings: {
            perCustomer: {
              algorithm: "token-bucket",
              capacity: 1,
              refillPerSec: 1,
              mode: "enforce",
            },
            perAddress: {
              algorithm: "token-bucket",
              capacity: 1,
              refillPerSec: 1,
              mode: "enforce",
              onStoreFailure: "open",
            },
          },
        },
      }),
      "policy.ceilings.perCustomer.onStoreFailure: onStoreFailure must be one of: open, closed, local",
    ],
    [
      "a dangling default tier",
      (value) => ({ ...value, policy: { ...value.policy, defaultTier: "gold" } }),
      'policy.defaultTier: defaultTier names tier "gold", which is not defined',
    ],
    [
      "no tiers",
      (value) => ({ ...value, policy: { ...value.policy, tiers: [] } }),
      "policy.tiers: a snapshot needs at least one tier",
    ],
  ])("refuses %s with a useful error", (_, mutate, expected) => {
    const value = structuredClone(snapshot) as unknown as Record<string, unknown> & {
      policy: Record<string, unknown>;
    };
    expect(errorsOf(mutate(value))).toContainEqual(expect.stringContaining(expected));
  });

  it("recomputes the same checksum the compiler wrote", () => {
    const { checksum, ...rest } = snapshot;
    expect(computeSnapshotChecksum(rest)).toBe(checksum);
  });
});

describe("isNewerSnapshot", () => {
  it("applies only a strictly higher version", () => {
    const current = exampleSnapshot(undefined, { version: 5 });
    expect(isNewerSnapshot(null, current)).toBe(true);
    expect(isNewerSnapshot(current, { version: 6 })).toBe(true);
    expect(isNewerSnapshot(current, { version: 5 })).toBe(false);
    expect(isNewerSnapshot(current, { version: 4 })).toBe(false);
  });
});

describe("a descriptor rule's durability", () => {
  const rule = (durability?: "async" | "replicated" | "sync") => ({
    id: "checkout",
    domain: "edge",
    descriptor: [{ key: "generic_key", value: "checkout" }],
    limit: { algorithm: "fixed-window", limit: 5, windowMs: 1_000 },
    ...(durability === undefined ? {} : { durability }),
  });
  const compiled = (durability?: "async" | "replicated") =>
    compileSnapshot(
      ZPolicyDocument.parse({ ...examplePolicyInput(), descriptorRules: [rule(durability)] }),
      OPTIONS,
    ).policy.descriptorRules?.[0];

  it("is compiled only when replicated, so other rules keep their bytes", () => {
    expect(compiled("replicated")?.durability).toBe("replicated");
    expect(compiled("async")).not.toHaveProperty("durability");
    expect(compiled()).not.toHaveProperty("durability");
  });

  it("refuses anything but async or replicated, at the field", () => {
    const parsed = ZPolicyDocument.safeParse({
      ...examplePolicyInput(),
      descriptorRules: [rule("sync")],
    });
    expect(
      parsed.error?.issues.map(
        (issue) => `${formatFieldPath(issue.path as (string | number)[])}: ${issue.message}`,
      ),
    ).toEqual(["descriptorRules[0].durability: durability must be one of: async, replicated"]);
  });
});
