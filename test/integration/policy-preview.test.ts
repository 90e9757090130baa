import { beforeAll, describe, expect, it } from "vitest";
import { createCustomer } from "@/lib/control/customer/create-customer";
import { createCustomerOverride } from "@/lib/control/customer-override/create-customer-override";
import type { ControlDeps } from "@/lib/control/deps";
import { isAppError } from "@/lib/control/errors";
import { raiseIncident } from "@/lib/control/incident/raise-incident";
import { previewPolicyChange } from "@/lib/control/policy/preview-policy-change";
import { createTier } from "@/lib/control/tier/create-tier";
import {
  countEverything,
  depsFor,
  importExamplePolicy,
  operatorContext,
  uniqueName,
} from "./helpers/policy-fixtures";
import { provideTestDatabase } from "./helpers/test-database";

const database = provideTestDatabase();
let deps: ControlDeps;

beforeAll(async () => {
  deps = depsFor(database.current().db);
  await importExamplePolicy(deps);
});

const bucket = (capacity: number, refillPerSec: number) => ({
  algorithm: "token-bucket" as const,
  capacity,
  refillPerSec,
});

/** A tier with four customers: an account override, a reports override, an incident, none. */
async function tierWithCustomers() {
  const tier = uniqueName("prev");
  const ctx = operatorContext();
  await createTier({ name: tier, limit: bucket(100, 10) }, ctx, deps);
  const [withOverride, withReportsOverride, withIncident, plain] = ["a", "b", "c", "d"].map(
    (suffix) => `${tier}-${suffix}`,
  ) as [string, string, string, string];
  for (const id of [withOverride, withReportsOverride, withIncident, plain]) {
    await createCustomer({ id, displayName: `Customer ${id}`, tier }, ctx, deps);
  }
  await createCustomerOverride(
    { customerId: withOverride, endpointClass: null, limit: bucket(500, 50) },
    ctx,
    deps,
  );
  await createCustomerOverride(
    { customerId: withReportsOverride, endpointClass: "reports", limit: bucket(50, 5) },
    ctx,
    deps,
  );
  await raiseIncident(
    {
      customerId: withIncident,
      endpointClass: null,
      limit: bucket(300, 30),
      durationMs: 3_600_000,
      owner: "dana",
    },
    ctx,
    deps,
  );
  return { tier, withOverride, withReportsOverride, withIncident, plain };
}

describe("previewPolicyChange", () => {
  it("a tier edit shows old and new, the customers on the tier, and whose override still wins", async () => {
    const { tier, withOverride, withIncident } = await tierWithCustomers();
    const preview = await previewPolicyChange(
      { kind: "tier", name: tier, limit: bucket(50, 5) },
      deps,
    );
    expect(preview.subject).toBe(`tier "${tier}"`);
    expect(preview.isNoChange).toBe(false);
    expect(preview.fields).toEqual([]);
    expect(preview.limits).toHaveLength(1);
    const [change] = preview.limits;
    expect(change).toMatchObject({
      scope: `tier:${tier}`,
      before: { ...bucket(100, 10), mode: "enforce", onStoreFailure: "open" },
      after: { ...bucket(50, 5), mode: "enforce", onStoreFailure: "open" },
      affected: {
        customersInScope: 4,
        outrankedCount: 2,
        scaledByIncident: [],
        candidates: [],
      },
    });
    expect(change?.affected.outranked).toEqual([
      {
        customerId: withOverride,
        displayName: `Customer ${withOverride}`,
        source: "override",
        limit: bucket(500, 50),
      },
      {
        customerId: withIncident,
        displayName: `Customer ${withIncident}`,
        source: "incident",
        limit: bucket(300, 30),
      },
    ]);
  });

  it("a customer whose incident multiplies the rule is reached by the edit, scaled", async () => {
    const { tier, plain } = await tierWithCustomers();
    await raiseIncident(
      { customerId: plain, endpointClass: null, factor: 2, durationMs: 3_600_000, owner: "dana" },
      operatorContext(),
      deps,
    );
    const preview = await previewPolicyChange(
      { kind: "tier", name: tier, limit: bucket(60, 6) },
      deps,
    );
    expect(preview.limits[0]?.affected).toMatchObject({
      outrankedCount: 2,
      scaledByIncident: [plain],
    });
  });

  it("writes nothing and publishes nothing", async () => {
    const { tier } = await tierWithCustomers();
    const { db } = database.current();
    const before = await countEverything(db);
    await previewPolicyChange({ kind: "tier", name: tier, limit: bucket(50, 5) }, deps);
    expect(await countEverything(db)).toEqual(before);
  });

  it("names the candidates that target the edited rule", async () => {
    const preview = await previewPolicyChange(
      { kind: "tier", name: "free", limit: bucket(15, 7) },
      deps,
    );
    expect(preview.limits[0]?.affected.candidates).toEqual(["free-halved"]);
  });

  it("an endpoint class edit lists each per-tier limit and its cost; a layer's overrides win only there", async () => {
    const { tier, withReportsOverride } = await tierWithCustomers();
    const preview = await previewPolicyChange(
      {
        kind: "endpoint-class",
        name: "reports",
        cost: 5,
        limits: {
          free: bucket(20, 0.5),
          pro: bucket(100, 5),
          enterprise: bucket(1000, 50),
          [tier]: bucket(40, 2),
        },
      },
      deps,
    );
    expect(preview.fields).toEqual([
      { owner: 'endpoint class "reports"', field: "cost", before: 10, after: 5 },
    ]);
    expect(preview.limits.map((change) => change.scope)).toEqual([`tier:${tier}/endpoint:reports`]);
    expect(preview.limits[0]?.before).toBeNull();
    expect(preview.limits[0]?.affected.outranked.map((c) => c.customerId)).toEqual([
      withReportsOverride,
    ]);
  });

  it("a ceiling reaches every customer and no override outranks it", async () => {
    const { db } = database.current();
    const preview = await previewPolicyChange(
      { kind: "settings", ceilings: { perCustomer: bucket(9000, 1500) } },
      deps,
    );
    expect(preview.limits.map((change) => change.scope)).toEqual(["ceiling"]);
    expect(preview.limits[0]?.affected).toMatchObject({
      customersInScope: await db.customer.count(),
      outrankedCount: 0,
    });
  });

  it("the same values are no change", async () => {
    const preview = await previewPolicyChange(
      { kind: "tier", name: "pro", limit: bucket(200, 100) },
      deps,
    );
    expect(preview.isNoChange).toBe(true);
  });

  it.each([
    [
      "a whole-policy rule is checked too: a free reports limit too small for one report, at its field",
      {
        kind: "endpoint-class" as const,
        name: "reports",
        limits: {
          free: bucket(5, 0.5),
          pro: bucket(100, 5),
          enterprise: bucket(1000, 50),
        },
      },
      "limits.free.capacity",
      "VALIDATION_FAILED",
    ],
    [
      "a tier limit below the costliest class it meets is refused at limit.capacity",
      { kind: "tier" as const, name: "pro", limit: bucket(5, 5) },
      "limit.capacity",
      "VALIDATION_FAILED",
    ],
    [
      "a capacity of 0 is refused at limit.capacity",
      { kind: "tier" as const, name: "free", limit: bucket(0, 1) },
      "limit.capacity",
      "VALIDATION_FAILED",
    ],
    [
      "an unknown tier is NOT_FOUND",
      { kind: "tier" as const, name: "no-such-tier", limit: bucket(1, 1) },
      null,
      "NOT_FOUND",
    ],
  ])("%s", async (_name, options, path, code) => {
    const error = await previewPolicyChange(options, deps).then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(isAppError(error) && error.code).toBe(code);
    if (path !== null && isAppError(error)) {
      expect(error.fieldErrors.map((fieldError) => fieldError.path)).toContain(path);
    }
  });
});
