import { describe, expect, it } from "vitest";
import { examplePolicyInput, exampleSnapshot, tokenBucket } from "../testing/policy-factory";
import { describeLimit } from "./limit-math";
import { type ResolvedCheck, resolveLimits } from "./resolve";
import { parsePolicyDocument, type TPolicyDocumentInput } from "./schemas";
import { formatScope, parseScope } from "./scope";
import { isInSlice, SLICE_BASIS_POINTS, slicePointOf } from "./staged-slice";

const NOW = Date.parse("2025-06-02T12:00:00.000Z");
const CUSTOMERS = Array.from({ length: 2000 }, (_, index) => `cust-${index}`);

function summarize(checks: readonly ResolvedCheck[]): string[] {
  return checks.map(
    (check) =>
      `${check.layer} ${check.scope} @${check.bucket} ${check.mode} ${check.onStoreFailure} ${describeLimit(check.limit)}`,
  );
}

/** The example policy with its `free-halved` candidate staged over `sliceBasisPoints`. */
function staged(sliceBasisPoints: number) {
  return (input: TPolicyDocumentInput) => {
    const candidate = input.dryRunCandidates?.[0];
    if (candidate === undefined) throw new Error("the example policy has a candidate");
    candidate.sliceBasisPoints = sliceBasisPoints;
  };
}

describe("slice points", () => {
  it("are whole numbers below 10,000, the same on every call", () => {
    for (const customer of CUSTOMERS) {
      const point = slicePointOf("free-halved", customer);
      expect(Number.isInteger(point) && point >= 0 && point < SLICE_BASIS_POINTS).toBe(true);
      expect(slicePointOf("free-halved", customer)).toBe(point);
    }
  });

  it("give each staged change its own slice", () => {
    const inA = CUSTOMERS.filter((customer) => isInSlice("change-a", customer, 1000));
    const inB = CUSTOMERS.filter((customer) => isInSlice("change-b", customer, 1000));
    expect(inA).not.toEqual(inB);
  });

  it("widening a slice keeps every subject in it and adds exactly the next points", () => {
    const at10 = new Set(CUSTOMERS.filter((customer) => isInSlice("free-halved", customer, 1000)));
    const at25 = CUSTOMERS.filter((customer) => isInSlice("free-halved", customer, 2500));
    for (const customer of at10) expect(at25).toContain(customer);
    const added = at25.filter((customer) => !at10.has(customer));
    for (const customer of added) {
      const point = slicePointOf("free-halved", customer);
      expect(point >= 1000 && point < 2500).toBe(true);
    }
    // 2,000 customers: about 200 and 500; the hash spreads them, it does not pick them.
    expect(at10.size).toBeGreaterThan(150);
    expect(at10.size).toBeLessThan(250);
    expect(at25.length).toBeGreaterThan(420);
    expect(at25.length).toBeLessThan(580);
  });
});

describe("resolution under a staged change", () => {
  const snapshot = exampleSnapshot(staged(1000));
  const inside = CUSTOMERS.find((customer) => isInSlice("free-halved", customer, 1000));
  const outside = CUSTOMERS.find((customer) => !isInSlice("free-halved", customer, 1000));
  if (inside === undefined || outside === undefined) throw new Error("both sides have customers");

  it("a subject in the slice is enforced under the new limit on the same bucket, the old one counted in dry-run", () => {
    const resolution = resolveLimits(snapshot, { customerId: inside, tier: "free" }, NOW);
    expect(summarize(resolution.checks).slice(0, 2)).toEqual([
      "account candidate:free-halved/slice @account enforce open token-bucket 10 burst, 5/s",
      "account candidate:free-halved/slice-previous @candidate:free-halved dry-run open token-bucket 20 burst, 10/s",
    ]);
    const account = resolution.trace?.slots.find((slot) => slot.layer === "account");
    expect(account?.rules.map((rule) => `${rule.scope} ${rule.status} ${rule.by}`)).toEqual([
      "tier:free replaced candidate:free-halved/slice",
      "candidate:free-halved/slice applies null",
    ]);
  });

  it("a subject outside the slice keeps the old limit, the new one counted in dry-run", () => {
    const resolution = resolveLimits(snapshot, { customerId: outside, tier: "free" }, NOW);
    expect(summarize(resolution.checks).slice(0, 2)).toEqual([
      "account tier:free @account enforce open token-bucket 20 burst, 10/s",
      "account candidate:free-halved @candidate:free-halved dry-run open token-bucket 10 burst, 5/s",
    ]);
  });

  it("the shared per-tier results never mix the two sides", () => {
    for (const customer of CUSTOMERS.slice(0, 300)) {
      const first = resolveLimits(snapshot, { customerId: customer, tier: "free" }, NOW, {
        trace: false,
      });
      const expected = isInSlice("free-halved", customer, 1000)
        ? "candidate:free-halved/slice"
        : "tier:free";
      expect(first.checks[0]?.scope).toBe(expected);
    }
  });

  it("a customer whose override outranks the target is not part of the staged change", () => {
    const withOverride = exampleSnapshot((input) => {
      staged(SLICE_BASIS_POINTS)(input);
      input.customers?.push({ id: inside, displayName: "Inside", tier: "free" });
      input.customerOverrides?.push({
        customerId: inside,
        endpointClass: null,
        limit: tokenBucket(50, 5),
      });
    });
    const resolution = resolveLimits(withOverride, { customerId: inside, tier: "free" }, NOW);
    expect(resolution.checks.map((check) => check.scope)).not.toContain(
      "candidate:free-halved/slice",
    );
    expect(resolution.checks[0]?.scope).toBe(`customer:${inside}`);
  });

  it("anonymous traffic is sliced by client address", () => {
    const addresses = Array.from(
      { length: 200 },
      (_, index) => `10.0.${index >> 8}.${index % 256}`,
    );
    const byAddress = exampleSnapshot((input) => {
      input.dryRunCandidates?.push({
        id: "address-tight",
        target: "address",
        limit: tokenBucket(50, 10),
        sliceBasisPoints: 5000,
      });
    });
    for (const address of addresses) {
      const resolution = resolveLimits(byAddress, { clientAddress: address, path: "/v1/x" }, NOW);
      const ceiling = resolution.checks.find((check) => check.bucket === "ceiling");
      expect(ceiling?.scope).toBe(
        isInSlice("address-tight", address, 5000) ? "candidate:address-tight/slice" : "address",
      );
    }
  });
});

describe("staged changes in a policy document", () => {
  it("a slice above 100 % is refused, naming the field", () => {
    const input = examplePolicyInput();
    staged(10_001)(input);
    const result = parsePolicyDocument(input);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors).toEqual([
      {
        path: ["dryRunCandidates", 0, "sliceBasisPoints"],
        message: "sliceBasisPoints must be at most 10000",
      },
    ]);
  });

  it("two staged changes of one rule are refused", () => {
    const input = examplePolicyInput();
    staged(100)(input);
    input.dryRunCandidates?.push({
      id: "free-other",
      target: "tier:free",
      limit: tokenBucket(15, 5),
      sliceBasisPoints: 100,
    });
    const result = parsePolicyDocument(input);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors.map((error) => error.message)).toEqual([
      "tier:free already has a staged change (dryRunCandidates[0]); one staged change per rule at a time",
    ]);
  });

  it("the slice's scopes have one spelling and unknown parts are not scopes", () => {
    for (const text of ["candidate:c1/slice", "candidate:c1/slice-previous", "candidate:c1"]) {
      const scope = parseScope(text);
      expect(scope === null ? null : formatScope(scope)).toBe(text);
    }
    expect(parseScope("candidate:c1/other")).toBeNull();
    expect(parseScope("candidate:c1/endpoint:search")).toBeNull();
  });
});
