import {
  canonicalPolicy,
  type TPolicyDocumentInput,
  ZPolicyDocument,
} from "@limitplane/enforcer/policy";
import { describe, expect, it } from "vitest";
import { isAppError } from "@/lib/control/errors";
import { exportPolicy } from "@/lib/control/policy/export-policy";
import { importPolicy } from "@/lib/control/policy/import-policy";
import { examplePolicyForSeed, seedPolicy } from "../../scripts/seed";
import {
  countEverything,
  depsFor,
  latestAuditEntries,
  operatorContext,
} from "./helpers/policy-fixtures";
import { provideTestDatabase } from "./helpers/test-database";

const source = provideTestDatabase();
const target = provideTestDatabase();
const seeded = provideTestDatabase();

async function refusal(promise: Promise<unknown>) {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  if (!isAppError(error)) throw new Error(`expected an AppError, got ${String(error)}`);
  return error;
}

/** The example with more tiers, so an invalid one sits among many. */
function manyTiers(nowMs: number): TPolicyDocumentInput {
  const input = examplePolicyForSeed(nowMs);
  for (const name of ["bronze", "silver", "gold"]) {
    input.tiers.push({
      name,
      limit: { algorithm: "token-bucket", capacity: 500, refillPerSec: 50 },
    });
  }
  return input;
}

describe("importPolicy and exportPolicy", () => {
  it("import into an empty database writes the policy as one audited change and version 1", async () => {
    const { db } = source.current();
    const deps = depsFor(db);
    const input = manyTiers(Date.now());
    const result = await importPolicy(input, operatorContext("initial policy"), deps);

    expect(result.policyVersion).toBe(1);
    expect(result.summary).toMatchObject({
      tiers: ["bronze", "enterprise", "free", "gold", "pro", "silver"],
      customers: 4,
      customerOverrides: 1,
      incidentOverrides: 1,
      dryRunCandidates: ["free-halved"],
    });
    const counts = await countEverything(db);
    expect(counts).toMatchObject({ audit: 1, versions: 1, outbox: 1, tiers: 6, customers: 4 });
    const [entry] = await latestAuditEntries(db);
    expect(entry).toMatchObject({
      action: "policy.import",
      entityType: "policy",
      entityId: "policy",
      actorName: "Dana Operator",
      reason: "initial policy",
      policyVersion: 1,
      before: { tiers: [], customers: 0 },
      after: { tiers: ["bronze", "enterprise", "free", "gold", "pro", "silver"], customers: 4 },
    });
    const exported = await exportPolicy({}, deps);
    expect(exported.document).toBe(canonicalPolicy(ZPolicyDocument.parse(input)));
  });

  it("export then import into an empty database reproduces the same policy, byte for byte", async () => {
    const exported = await exportPolicy({}, depsFor(source.current().db));
    const deps = depsFor(target.current().db);
    await importPolicy(JSON.parse(exported.document), operatorContext("copy"), deps);
    expect((await exportPolicy({}, deps)).document).toBe(exported.document);
  });

  it("importing the same policy again says no change and writes nothing: no entity, no audit entry, no version", async () => {
    const { db } = source.current();
    const deps = depsFor(db);
    const { document } = await exportPolicy({}, deps);
    const versionsBefore = await db.tier.findMany({ select: { name: true, version: true } });
    const before = await countEverything(db);
    const result = await importPolicy(JSON.parse(document), operatorContext("re-import"), deps);
    expect(result).toMatchObject({
      isNoChange: true,
      auditEntryId: null,
      policyVersion: null,
      published: false,
    });
    expect(await db.tier.findMany({ select: { name: true, version: true } })).toEqual(
      versionsBefore,
    );
    expect(await countEverything(db)).toEqual(before);
  });

  it("a file with one invalid entry among many writes nothing and names its position and field", async () => {
    const { db } = source.current();
    const before = await countEverything(db);
    const input = manyTiers(Date.now());
    const gold = input.tiers[4];
    if (gold === undefined) throw new Error("fixture changed");
    gold.limit = { algorithm: "token-bucket", capacity: 500.5, refillPerSec: 50 };

    const error = await refusal(importPolicy(input, operatorContext(), depsFor(db)));
    expect(error.code).toBe("VALIDATION_FAILED");
    expect(error.fieldErrors).toEqual([
      { path: "tiers[4].limit.capacity", message: "capacity must be a whole number, not 500.5" },
    ]);
    expect(await countEverything(db)).toEqual(before);
  });

  it("every problem is reported at once, with the context's", async () => {
    const { db } = source.current();
    const before = await countEverything(db);
    const input = manyTiers(Date.now());
    input.defaultTier = "platinum";
    input.customers?.push({ id: "new one", displayName: "Spaces", tier: "free" });
    const error = await refusal(
      importPolicy(
        input,
        { actor: { type: "operator", id: "op", name: "Dana" }, reason: " " },
        depsFor(db),
      ),
    );
    expect(error.fieldErrors.map((fieldError) => fieldError.path).sort()).toEqual([
      "customers[4].id",
      "defaultTier",
      "reason",
    ]);
    expect(error.message).toMatch(/^The policy has 3 problems; nothing was imported\./);
    expect(await countEverything(db)).toEqual(before);
  });

  it("an expired incident in the file is refused: it belongs to history", async () => {
    const { db } = source.current();
    const before = await countEverything(db);
    const nowMs = Date.now();
    const input = examplePolicyForSeed(nowMs - 2 * 86_400_000);
    const error = await refusal(importPolicy(input, operatorContext(), depsFor(db)));
    expect(error.fieldErrors).toEqual([
      {
        path: "incidentOverrides[0].expiresAt",
        message: expect.stringMatching(/^incident "inc-2025-06-02-acme" expired at .*; remove it/),
      },
    ]);
    expect(await countEverything(db)).toEqual(before);
  });

  it("replacing the policy removes what the file omits and reverts omitted incidents", async () => {
    const { db } = source.current();
    const deps = depsFor(db);
    const input = examplePolicyForSeed(Date.now());
    input.incidentOverrides = [];
    input.customerOverrides = [];
    input.customers = input.customers?.filter((customer) => customer.id !== "globex");
    const result = await importPolicy(input, operatorContext("trim"), deps);

    expect(result.policyVersion).toBe(2);
    expect(await db.tier.findMany({ orderBy: { name: "asc" }, select: { name: true } })).toEqual([
      { name: "enterprise" },
      { name: "free" },
      { name: "pro" },
    ]);
    expect(await db.customer.count()).toBe(3);
    const incident = await db.incidentOverride.findUniqueOrThrow({
      where: { id: "inc-2025-06-02-acme" },
      select: { revokedAt: true, revokedBy: true, version: true },
    });
    expect(incident).toMatchObject({ revokedBy: "Dana Operator", version: 2 });
    expect(incident.revokedAt).not.toBeNull();
    const exported = await exportPolicy({}, deps);
    expect(exported.document).toBe(canonicalPolicy(ZPolicyDocument.parse(input)));
  });
});

describe("seedPolicy", () => {
  it("imports the example once, by the system actor, with its incident moved to start now", async () => {
    const { db } = seeded.current();
    const nowMs = Date.parse("2030-03-01T12:00:00.000Z");
    const deps = depsFor(db, () => nowMs);
    expect(await seedPolicy(deps)).toEqual({ status: "seeded", policyVersion: 1 });
    expect(await seedPolicy(deps)).toEqual({ status: "skipped" });
    const [entry] = await latestAuditEntries(db);
    expect(entry).toMatchObject({
      action: "policy.import",
      actorType: "system",
      actorName: "seed",
      reason: "initial seed",
    });
    expect(
      await db.incidentOverride.findMany({ select: { startsAt: true, expiresAt: true } }),
    ).toEqual([{ startsAt: new Date(nowMs), expiresAt: new Date(nowMs + 12 * 3_600_000) }]);
    expect(await db.customer.count()).toBe(4);
  });
});
