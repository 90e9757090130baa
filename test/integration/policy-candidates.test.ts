import { resolveLimits } from "@limitplane/enforcer/policy";
import { beforeAll, describe, expect, it } from "vitest";
import { createCandidate } from "@/lib/control/candidate/create-candidate";
import { discardCandidate } from "@/lib/control/candidate/discard-candidate";
import { listCandidates } from "@/lib/control/candidate/list-candidates";
import { promoteCandidate } from "@/lib/control/candidate/promote-candidate";
import { updateCandidate } from "@/lib/control/candidate/update-candidate";
import type { ControlDeps } from "@/lib/control/deps";
import { getEndpointClass } from "@/lib/control/endpoint-class/get-endpoint-class";
import { getPolicySettings } from "@/lib/control/settings/get-policy-settings";
import { createTier } from "@/lib/control/tier/create-tier";
import { getTier } from "@/lib/control/tier/get-tier";
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

async function newTier(): Promise<string> {
  const name = uniqueName("cand-tier");
  await createTier(
    { name, limit: { ...bucket(100, 10), onStoreFailure: "closed" } },
    operatorContext(),
    deps,
  );
  return name;
}

describe("dry-run candidates", () => {
  it("a candidate runs in dry-run next to the enforced limit it would replace, for the same keys", async () => {
    const { db } = database.current();
    const tier = await newTier();
    const { result, entry } = await expectOneAuditEntry(db, () =>
      createCandidate(
        { target: `tier:${tier}`, limit: bucket(50, 5) },
        operatorContext("try halving"),
        deps,
      ),
    );
    const { candidate } = result;
    expect(candidate).toMatchObject({
      target: `tier:${tier}`,
      createdBy: "Dana Operator",
      version: 1,
    });
    expect(candidate.id).toMatch(/^cand-[0-9a-f]{12}$/);
    expect(entry).toMatchObject({
      action: "candidate.create",
      entityType: "candidate",
      entityId: candidate.id,
    });
    const snapshot = await latestSnapshot(db);
    const checks = resolveLimits(
      snapshot,
      { customerId: "someone", tier, endpointClass: "default" },
      Date.now(),
    ).checks.map((check) => ({ scope: check.scope, mode: check.mode, bucket: check.bucket }));
    expect(checks).toEqual([
      { scope: `tier:${tier}`, mode: "enforce", bucket: "account" },
      { scope: `candidate:${candidate.id}`, mode: "dry-run", bucket: `candidate:${candidate.id}` },
      { scope: "ceiling", mode: "enforce", bucket: "ceiling" },
    ]);
    expect((await listCandidates(deps)).map((item) => item.id)).toContain(candidate.id);
  });

  it("promote makes the candidate's limit the enforced rule, keeps its failure policy, and records it on the rule", async () => {
    const { db } = database.current();
    const tier = await newTier();
    const { candidate } = await createCandidate(
      { id: uniqueName("halve"), target: `tier:${tier}`, limit: bucket(50, 5) },
      operatorContext(),
      deps,
    );
    const { result, entry } = await expectOneAuditEntry(db, () =>
      promoteCandidate(
        { id: candidate.id, expectedVersion: 1 },
        operatorContext("no complaints in a week"),
        deps,
      ),
    );
    expect(result.policyVersion).not.toBeNull();
    const promoted = { ...bucket(50, 5), mode: "enforce", onStoreFailure: "closed" };
    expect(await getTier(tier, deps)).toMatchObject({ limit: promoted, version: 2 });
    expect(entry).toMatchObject({
      action: "candidate.promote",
      entityType: "tier",
      entityId: tier,
      before: { limit: { capacity: 100 }, version: 1 },
      after: {
        limit: promoted,
        version: 2,
        promotedCandidate: { id: candidate.id, target: `tier:${tier}` },
      },
      reason: "no complaints in a week",
    });
    const snapshot = await latestSnapshot(db);
    expect(snapshot.policy.dryRunCandidates.map((item) => item.id)).not.toContain(candidate.id);
    expect(snapshot.policy.tiers.find((item) => item.name === tier)?.limit).toEqual(promoted);
  });

  it("promote adds a new per-tier endpoint limit, and replaces an endpoint ceiling", async () => {
    const { candidate: endpoint } = await createCandidate(
      { target: "tier:pro/endpoint:search", limit: bucket(30, 3) },
      operatorContext(),
      deps,
    );
    await promoteCandidate({ id: endpoint.id, expectedVersion: 1 }, operatorContext(), deps);
    expect((await getEndpointClass("search", deps)).limits.pro).toEqual({
      ...bucket(30, 3),
      mode: "enforce",
      onStoreFailure: "open",
    });
    const { candidate: ceiling } = await createCandidate(
      { target: "ceiling/endpoint:reports", limit: bucket(1500, 80) },
      operatorContext(),
      deps,
    );
    await promoteCandidate({ id: ceiling.id, expectedVersion: 1 }, operatorContext(), deps);
    expect((await getEndpointClass("reports", deps)).ceiling).toEqual({
      ...bucket(1500, 80),
      mode: "enforce",
      onStoreFailure: "local",
    });
    const { candidate: address } = await createCandidate(
      { target: "address", limit: bucket(80, 16) },
      operatorContext(),
      deps,
    );
    await promoteCandidate({ id: address.id, expectedVersion: 1 }, operatorContext(), deps);
    expect((await getPolicySettings(deps)).ceilings.perAddress).toEqual({
      ...bucket(80, 16),
      mode: "enforce",
      onStoreFailure: "local",
    });
  });

  it("update and discard carry the version; discard leaves the target as it was", async () => {
    const { db } = database.current();
    const tier = await newTier();
    const { candidate } = await createCandidate(
      { target: `tier:${tier}`, limit: bucket(50, 5) },
      operatorContext(),
      deps,
    );
    const { entry } = await expectOneAuditEntry(db, () =>
      updateCandidate(
        { id: candidate.id, expectedVersion: 1, limit: bucket(60, 6) },
        operatorContext(),
        deps,
      ),
    );
    expect(entry).toMatchObject({
      action: "candidate.update",
      before: { limit: { capacity: 50 } },
      after: { limit: { capacity: 60 } },
    });
    const stale = await expectRefusedWithoutWrites(db, () =>
      discardCandidate({ id: candidate.id, expectedVersion: 1 }, operatorContext(), deps),
    );
    expect(stale.code).toBe("VERSION_CONFLICT");
    const { entry: discarded } = await expectOneAuditEntry(db, () =>
      discardCandidate(
        { id: candidate.id, expectedVersion: 2 },
        operatorContext("too strict"),
        deps,
      ),
    );
    expect(discarded).toMatchObject({
      action: "candidate.discard",
      entityId: candidate.id,
      after: null,
    });
    expect((await getTier(tier, deps)).limit).toMatchObject({ capacity: 100 });
    const gone = await expectRefusedWithoutWrites(db, () =>
      promoteCandidate({ id: candidate.id, expectedVersion: 2 }, operatorContext(), deps),
    );
    expect(gone.code).toBe("NOT_FOUND");
  });

  it.each([
    {
      name: "a target that is not a rule operators edit",
      target: "customer:acme",
      capacity: 5,
      message:
        "target must be the scope the candidate would replace: tier:T, tier:T/endpoint:E, ceiling, ceiling/endpoint:E, address or address/endpoint:E",
    },
    {
      name: "a tier that does not exist",
      target: "tier:platinum",
      capacity: 50,
      message: 'there is no tier "platinum"',
    },
    {
      name: "a limit too small for the class's cost",
      target: "tier:pro/endpoint:reports",
      capacity: 5,
      message:
        'capacity 5 is less than the 10 units one request to endpoint class "reports" costs: no such request could ever be admitted',
    },
  ])("createCandidate refuses $name, writing nothing", async ({ target, capacity, message }) => {
    const error = await expectRefusedWithoutWrites(database.current().db, () =>
      createCandidate({ target, limit: bucket(capacity, 1) }, operatorContext(), deps),
    );
    expect(error.fieldErrors.map((fieldError) => fieldError.message)).toEqual([message]);
  });
});
