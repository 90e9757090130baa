import { beforeAll, describe, expect, it } from "vitest";
import type { ControlDeps } from "@/lib/control/deps";
import { createEndpointClass } from "@/lib/control/endpoint-class/create-endpoint-class";
import { deleteEndpointClass } from "@/lib/control/endpoint-class/delete-endpoint-class";
import { getEndpointClass } from "@/lib/control/endpoint-class/get-endpoint-class";
import { updateEndpointClass } from "@/lib/control/endpoint-class/update-endpoint-class";
import { getPolicySettings } from "@/lib/control/settings/get-policy-settings";
import { updatePolicySettings } from "@/lib/control/settings/update-policy-settings";
import { createTier } from "@/lib/control/tier/create-tier";
import { deleteTier } from "@/lib/control/tier/delete-tier";
import { getTier } from "@/lib/control/tier/get-tier";
import { listTiers } from "@/lib/control/tier/list-tiers";
import { updateTier } from "@/lib/control/tier/update-tier";
import {
  depsFor,
  expectOneAuditEntry,
  expectRefusedWithoutWrites,
  importExamplePolicy,
  latestSnapshot,
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

describe("tiers", () => {
  it("createTier stores the tier, one audit entry and a new compiled version", async () => {
    const { db } = database.current();
    const name = uniqueName("gold");
    const { result, entry, before, after } = await expectOneAuditEntry(db, () =>
      createTier(
        { name, displayName: "Gold", limit: bucket(400, 40) },
        operatorContext("new plan"),
        deps,
      ),
    );
    const tier = {
      name,
      displayName: "Gold",
      limit: { ...bucket(400, 40), mode: "enforce", onStoreFailure: "open" },
    };
    expect(result.tier).toMatchObject({ ...tier, version: 1 });
    expect(result.policyVersion).toBe((before.versions ?? 0) + 1);
    expect(result.published).toBe(false);
    expect(after).toMatchObject({
      tiers: (before.tiers ?? 0) + 1,
      outbox: (before.outbox ?? 0) + 1,
    });
    expect(entry).toMatchObject({
      action: "tier.create",
      actorType: "operator",
      actorId: "op-dana",
      actorName: "Dana Operator",
      entityType: "tier",
      entityId: name,
      customerId: null,
      before: null,
      after: { ...tier, version: 1 },
      reason: "new plan",
      requestId: "req-test-1",
      policyVersion: result.policyVersion,
    });
    const snapshot = await latestSnapshot(db);
    expect(snapshot.version).toBe(result.policyVersion);
    expect(snapshot.policy.tiers).toContainEqual({ name, limit: tier.limit });
    expect(await getTier(name, deps)).toEqual(result.tier);
  });

  it("updateTier records before and after and bumps the tier's version", async () => {
    const { db } = database.current();
    const name = uniqueName("silver");
    await createTier({ name, limit: bucket(100, 10) }, operatorContext(), deps);
    const { result, entry } = await expectOneAuditEntry(db, () =>
      updateTier(
        { name, expectedVersion: 1, limit: bucket(150, 15) },
        operatorContext("more"),
        deps,
      ),
    );
    expect(result.tier.version).toBe(2);
    expect(result.policyVersion).not.toBeNull();
    expect(entry).toMatchObject({
      action: "tier.update",
      entityId: name,
      before: { version: 1, limit: { capacity: 100, refillPerSec: 10 } },
      after: { version: 2, limit: { capacity: 150, refillPerSec: 15 } },
      reason: "more",
    });
  });

  it("a change enforcers cannot see (a display name) is audited but publishes no version", async () => {
    const { db } = database.current();
    const name = uniqueName("label");
    await createTier({ name, limit: bucket(100, 10) }, operatorContext(), deps);
    const { result, entry, before, after } = await expectOneAuditEntry(db, () =>
      updateTier({ name, expectedVersion: 1, displayName: "Labelled" }, operatorContext(), deps),
    );
    expect(result.policyVersion).toBeNull();
    expect(entry).toMatchObject({ action: "tier.update", policyVersion: null });
    expect(after.versions).toBe(before.versions);
    expect(after.outbox).toBe(before.outbox);
  });

  it("a stale version is refused, saying what changed, who changed it and the current tier", async () => {
    const { db } = database.current();
    const name = uniqueName("contended");
    await createTier({ name, limit: bucket(50, 5) }, operatorContext(), deps);
    await updateTier(
      { name, expectedVersion: 1, limit: bucket(60, 5) },
      { actor: { type: "operator", id: "op-ana", name: "Ana" }, reason: "launch traffic" },
      deps,
    );
    const error = await expectRefusedWithoutWrites(db, () =>
      updateTier({ name, expectedVersion: 1, limit: bucket(70, 7) }, operatorContext(), deps),
    );
    expect(error.code).toBe("VERSION_CONFLICT");
    expect(error.message).toContain(
      `changed after version 1, which this change was based on; it is now version 2`,
    );
    expect(error.message).toContain("by Ana (operator)");
    expect(error.message).toContain('reason: "launch traffic"');
    expect(error.message).toContain("What changed: limit.capacity 50 → 60.");
    expect(error.details).toMatchObject({
      expectedVersion: 1,
      currentVersion: 2,
      current: { name, version: 2, limit: { capacity: 60 } },
      changes: [{ path: "limit.capacity", before: 50, after: 60 }],
    });
  });

  it("concurrent changes apply one at a time: versions are contiguous and a second edit of the same version conflicts", async () => {
    const { db } = database.current();
    const created = await Promise.all(
      Array.from({ length: 5 }, () =>
        createTier({ name: uniqueName("burst"), limit: bucket(100, 10) }, operatorContext(), deps),
      ),
    );
    const versions = created.map((result) => result.policyVersion ?? 0).sort((a, b) => a - b);
    const first = versions[0] ?? 0;
    expect(versions).toEqual([first, first + 1, first + 2, first + 3, first + 4]);

    const name = created[0]?.tier.name ?? "";
    const outcomes = await Promise.allSettled([
      updateTier({ name, expectedVersion: 1, limit: bucket(110, 10) }, operatorContext("a"), deps),
      updateTier({ name, expectedVersion: 1, limit: bucket(120, 10) }, operatorContext("b"), deps),
    ]);
    expect(outcomes.map((outcome) => outcome.status).sort()).toEqual(["fulfilled", "rejected"]);
    const rejected = outcomes.find((outcome) => outcome.status === "rejected");
    expect(rejected?.status === "rejected" && rejected.reason).toMatchObject({
      code: "VERSION_CONFLICT",
    });
    expect(await db.auditEntry.count({ where: { entityType: "tier", entityId: name } })).toBe(2);
  });

  it.each([
    {
      name: "a malformed limit, and a missing reason, are reported by field",
      options: () => ({
        name: uniqueName("bad"),
        limit: { algorithm: "token-bucket", capacity: "ten", refillPerSec: 1 },
      }),
      context: { actor: { type: "operator", id: "op", name: "Dana" }, reason: "" },
      code: "VALIDATION_FAILED",
      fields: ["limit.capacity", "reason"],
    },
    {
      name: "a limit too small for the costliest endpoint class points at the tier's own field",
      options: () => ({ name: uniqueName("tiny"), limit: bucket(5, 1) }),
      context: operatorContext(),
      code: "VALIDATION_FAILED",
      fields: ["limit.capacity"],
    },
    {
      name: "an existing name is a conflict",
      options: () => ({ name: "pro", limit: bucket(5000, 500) }),
      context: operatorContext(),
      code: "CONFLICT",
      fields: ["name"],
    },
  ])("createTier: $name, and nothing is written", async ({ options, context, code, fields }) => {
    const error = await expectRefusedWithoutWrites(database.current().db, () =>
      // The options are deliberately malformed in some cases: the service parses its input.
      createTier(
        options() as Parameters<typeof createTier>[0],
        context as Parameters<typeof createTier>[1],
        deps,
      ),
    );
    expect(error.code).toBe(code);
    expect(error.fieldErrors.map((fieldError) => fieldError.path)).toEqual(fields);
  });

  it("the cost rule names its reason", async () => {
    const error = await expectRefusedWithoutWrites(database.current().db, () =>
      createTier({ name: uniqueName("tiny"), limit: bucket(5, 1) }, operatorContext(), deps),
    );
    expect(error.fieldErrors[0]?.message).toBe(
      'capacity 5 is less than the 10 units one request to endpoint class "reports" costs: no such request could ever be admitted',
    );
  });

  it("updating or deleting a tier that does not exist is NOT_FOUND, and writes nothing", async () => {
    const { db } = database.current();
    const update = await expectRefusedWithoutWrites(db, () =>
      updateTier(
        { name: "nonexistent", expectedVersion: 1, displayName: "x" },
        operatorContext(),
        deps,
      ),
    );
    expect(update.code).toBe("NOT_FOUND");
    const remove = await expectRefusedWithoutWrites(db, () =>
      deleteTier({ name: "nonexistent", expectedVersion: 1 }, operatorContext(), deps),
    );
    expect(remove.code).toBe("NOT_FOUND");
    expect(remove.message).toBe('Tier "nonexistent" does not exist.');
  });

  it("deleting a tier still in use is refused, naming everything that uses it", async () => {
    const error = await expectRefusedWithoutWrites(database.current().db, () =>
      deleteTier({ name: "free", expectedVersion: 1 }, operatorContext(), deps),
    );
    expect(error.code).toBe("CONFLICT");
    expect(error.message).toBe(
      'tier "free" is still used by the settings (defaultTier), endpoint class "reports" (limits.free), endpoint class "search" (limits.free), dry-run candidate "free-halved" (target tier:free), customer "initech"; change or remove those first.',
    );
  });

  it("deleteTier removes an unused tier with one audit entry", async () => {
    const { db } = database.current();
    const name = uniqueName("gone");
    await createTier({ name, limit: bucket(100, 10) }, operatorContext(), deps);
    const { result, entry } = await expectOneAuditEntry(db, () =>
      deleteTier({ name, expectedVersion: 1 }, operatorContext("retired"), deps),
    );
    expect(result.policyVersion).not.toBeNull();
    expect(entry).toMatchObject({
      action: "tier.delete",
      entityId: name,
      after: null,
      before: { name, version: 1 },
    });
    expect((await listTiers(deps)).map((tier) => tier.name)).not.toContain(name);
    expect((await latestSnapshot(db)).policy.tiers.map((tier) => tier.name)).not.toContain(name);
  });
});

describe("endpoint classes", () => {
  it("createEndpointClass stores the class with its rules and an audit entry", async () => {
    const { db } = database.current();
    const name = uniqueName("exports");
    const { result, entry } = await expectOneAuditEntry(db, () =>
      createEndpointClass(
        {
          name,
          match: [
            { method: "POST", path: `/v1/${name}` },
            { method: "GET", path: `/v1/${name}/*` },
          ],
          cost: 5,
          limits: { pro: bucket(50, 5) },
        },
        operatorContext(),
        deps,
      ),
    );
    expect(result.endpointClass).toMatchObject({
      name,
      cost: 5,
      keyBy: "address",
      ceiling: null,
      anonymousLimit: null,
      match: [
        { method: "POST", path: `/v1/${name}` },
        { method: "GET", path: `/v1/${name}/*` },
      ],
      version: 1,
    });
    expect(entry).toMatchObject({
      action: "endpoint-class.create",
      entityType: "endpoint-class",
      entityId: name,
    });
    const compiled = (await latestSnapshot(db)).policy.endpointClasses.find((c) => c.name === name);
    expect(compiled?.limits).toEqual({
      pro: { ...bucket(50, 5), mode: "enforce", onStoreFailure: "open" },
    });
    expect(await getEndpointClass(name, deps)).toEqual(result.endpointClass);
  });

  it("a match rule another class owns is refused at the rule, naming the owner", async () => {
    const error = await expectRefusedWithoutWrites(database.current().db, () =>
      createEndpointClass(
        { name: uniqueName("dup"), match: [{ method: "GET", path: "/v1/search" }] },
        operatorContext(),
        deps,
      ),
    );
    expect(error.code).toBe("VALIDATION_FAILED");
    expect(error.fieldErrors).toEqual([
      {
        path: "match[0]",
        message:
          'GET /v1/search is already matched by endpoint class "search" (endpointClasses.search.match[0]); a method and path pattern may belong to one class only',
      },
    ]);
  });

  it("a problem the change causes in another entity names that entity", async () => {
    const { db } = database.current();
    const name = uniqueName("pricey");
    await createEndpointClass({ name, cost: 1 }, operatorContext(), deps);
    const error = await expectRefusedWithoutWrites(db, () =>
      updateEndpointClass({ name, expectedVersion: 1, cost: 50 }, operatorContext(), deps),
    );
    expect(error.fieldErrors).toContainEqual({
      path: "tiers.free.limit.capacity",
      message: `tier "free": capacity 20 is less than the 50 units one request to endpoint class "${name}" costs: no such request could ever be admitted`,
    });
  });

  it("updateEndpointClass changes only the fields given", async () => {
    const { db } = database.current();
    const name = uniqueName("partial");
    await createEndpointClass(
      { name, cost: 2, ceiling: bucket(1000, 100), displayName: "Partial" },
      operatorContext(),
      deps,
    );
    const { result, entry } = await expectOneAuditEntry(db, () =>
      updateEndpointClass(
        { name, expectedVersion: 1, keyBy: "address-and-route", ceiling: null },
        operatorContext(),
        deps,
      ),
    );
    expect(result.endpointClass).toMatchObject({
      cost: 2,
      displayName: "Partial",
      keyBy: "address-and-route",
      ceiling: null,
      version: 2,
    });
    expect(entry).toMatchObject({
      action: "endpoint-class.update",
      before: { keyBy: "address", ceiling: { capacity: 1000 } },
      after: { keyBy: "address-and-route", ceiling: null },
    });
  });

  it("deleting a class in use is refused; an unused one is deleted", async () => {
    const { db } = database.current();
    const inUse = await expectRefusedWithoutWrites(db, () =>
      deleteEndpointClass({ name: "reports", expectedVersion: 1 }, operatorContext(), deps),
    );
    expect(inUse.message).toBe(
      'endpoint class "reports" is still used by customer overrides "customer:globex/endpoint:reports"; change or remove those first.',
    );
    const defaultClass = await expectRefusedWithoutWrites(db, () =>
      deleteEndpointClass({ name: "default", expectedVersion: 1 }, operatorContext(), deps),
    );
    expect(defaultClass.message).toContain("the settings (defaultEndpointClass)");
    const stale = await expectRefusedWithoutWrites(db, () =>
      deleteEndpointClass({ name: "search", expectedVersion: 7 }, operatorContext(), deps),
    );
    expect(stale.code).toBe("VERSION_CONFLICT");
    expect(stale.message).toContain(
      'This change was based on version 7 of endpoint class "search", but its current version is 1.',
    );

    const name = uniqueName("unused");
    await createEndpointClass({ name }, operatorContext(), deps);
    const { entry } = await expectOneAuditEntry(db, () =>
      deleteEndpointClass({ name, expectedVersion: 1 }, operatorContext(), deps),
    );
    expect(entry).toMatchObject({ action: "endpoint-class.delete", entityId: name, after: null });
  });
});

describe("settings", () => {
  it("updatePolicySettings changes a ceiling and keeps the rest", async () => {
    const { db } = database.current();
    const current = await getPolicySettings(deps);
    const { result, entry } = await expectOneAuditEntry(db, () =>
      updatePolicySettings(
        { expectedVersion: current.version, ceilings: { perAddress: bucket(200, 40) } },
        operatorContext("office NAT"),
        deps,
      ),
    );
    expect(result.settings.ceilings).toEqual({
      perCustomer: current.ceilings.perCustomer,
      perAddress: { ...bucket(200, 40), mode: "enforce", onStoreFailure: "local" },
    });
    expect(result.settings.guardrails).toEqual(current.guardrails);
    expect(entry).toMatchObject({
      action: "settings.update",
      entityType: "settings",
      entityId: "settings",
      before: { ceilings: { perAddress: { capacity: 100 } }, version: current.version },
      after: { ceilings: { perAddress: { capacity: 200 } }, version: current.version + 1 },
    });
    expect((await latestSnapshot(db)).policy.ceilings.perAddress).toMatchObject({ capacity: 200 });
  });

  it("tightening the guardrails below a current incident is refused, naming it", async () => {
    const { db } = database.current();
    const current = await getPolicySettings(deps);
    const error = await expectRefusedWithoutWrites(db, () =>
      updatePolicySettings(
        { expectedVersion: current.version, guardrails: { maxIncidentFactor: 2 } },
        operatorContext(),
        deps,
      ),
    );
    expect(error.fieldErrors).toEqual([
      {
        path: 'incidentOverrides["inc-2025-06-02-acme"].factor',
        message:
          'incident "inc-2025-06-02-acme": factor 3 would raise the limit 3x; the maximum raise is 2x (guardrails.maxIncidentFactor)',
      },
    ]);
  });

  it("a default tier that does not exist is refused at the field; so is an empty change", async () => {
    const { db } = database.current();
    const { version } = await getPolicySettings(deps);
    const missing = await expectRefusedWithoutWrites(db, () =>
      updatePolicySettings(
        { expectedVersion: version, defaultTier: "platinum" },
        operatorContext(),
        deps,
      ),
    );
    expect(missing.fieldErrors).toEqual([
      { path: "defaultTier", message: 'defaultTier names tier "platinum", which is not defined' },
    ]);
    const empty = await expectRefusedWithoutWrites(db, () =>
      updatePolicySettings({ expectedVersion: version }, operatorContext(), deps),
    );
    expect(empty.message).toBe(
      "(root): give at least one field to change: defaultTier, defaultEndpointClass, ceilings, guardrails",
    );
  });
});
