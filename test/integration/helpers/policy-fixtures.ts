/** Factories and probes shared by the policy storage tests. */
import { randomBytes } from "node:crypto";
import { PolicyState, parseSnapshot, type TSnapshot } from "@limitplane/enforcer/policy";
import { expect } from "vitest";
import type { ChangeContext } from "@/lib/control/change-context";
import type { ControlDeps } from "@/lib/control/deps";
import { type AppError, isAppError } from "@/lib/control/errors";
import { readCompiledSnapshot } from "@/lib/control/policy/get-current-snapshot";
import { importPolicy } from "@/lib/control/policy/import-policy";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { examplePolicyForSeed } from "../../../scripts/seed";

/** A name no other test uses: lowercase, valid for tiers, classes, customers and ids. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString("hex")}`;
}

export function operatorContext(reason = "test change", name = "Dana Operator"): ChangeContext {
  return { actor: { type: "operator", id: "op-dana", name }, reason, requestId: "req-test-1" };
}

/** Services with no Redis: publication is left to the (absent) worker. */
export function depsFor(db: PrismaClient, nowMs: () => number = Date.now): ControlDeps {
  return { db, publisher: null, clock: { nowMs } };
}

/** Imports the example policy (incidents re-dated to now) as the starting point. */
export async function importExamplePolicy(deps: ControlDeps): Promise<void> {
  await importPolicy(
    examplePolicyForSeed(deps.clock.nowMs()),
    operatorContext("start from the example"),
    deps,
  );
}

/**
 * A fingerprint of everything stored: the rows in every table, the sum of every entity's
 * `version` (so an update that was not rolled back shows), outbox attempts, and the latest policy
 * version. Two equal fingerprints mean nothing was written in between.
 */
export async function countEverything(db: PrismaClient): Promise<Record<string, number>> {
  const rows = await db.$queryRaw<{ name: string; count: bigint; versions: bigint }[]>`
    SELECT 'settings' AS name, count(*) AS count, coalesce(sum(version), 0) AS versions FROM "PolicySettings"
    UNION ALL SELECT 'tiers', count(*), coalesce(sum(version), 0) FROM "Tier"
    UNION ALL SELECT 'endpointClasses', count(*), coalesce(sum(version), 0) FROM "EndpointClass"
    UNION ALL SELECT 'customers', count(*), coalesce(sum(version), 0) FROM "Customer"
    UNION ALL SELECT 'customerOverrides', count(*), coalesce(sum(version), 0) FROM "CustomerOverride"
    UNION ALL SELECT 'incidents', count(*), coalesce(sum(version), 0) FROM "IncidentOverride"
    UNION ALL SELECT 'candidates', count(*), coalesce(sum(version), 0) FROM "DryRunCandidate"
    UNION ALL SELECT 'descriptorRules', count(*), coalesce(sum(version), 0) FROM "DescriptorRule"
    UNION ALL SELECT 'outboundBudgets', count(*), coalesce(sum(version), 0) FROM "OutboundBudget"
    UNION ALL SELECT 'versions', count(*), coalesce(max(version), 0) FROM "PolicyVersion"
    UNION ALL SELECT 'entries', count(*), coalesce(sum(version), 0) FROM "PolicyEntry"
    UNION ALL SELECT 'outbox', count(*), coalesce(sum(attempts), 0) FROM "OutboxEvent"
    UNION ALL SELECT 'changeRequests', count(*), coalesce(sum(version), 0) FROM "ChangeRequest"
    UNION ALL SELECT 'changeRequestEvents', count(*), 0 FROM "ChangeRequestEvent"
    UNION ALL SELECT 'approvalSettings', count(*), coalesce(sum(version), 0) FROM "ApprovalSettings"
    UNION ALL SELECT 'audit', count(*), 0 FROM "AuditEntry"`;
  return Object.fromEntries(
    rows.flatMap((row) => [
      [row.name, Number(row.count)],
      [`${row.name}.versions`, Number(row.versions)],
    ]),
  );
}

/** Awaits a change that must be refused; asserts it wrote nothing, and returns the error. */
export async function expectRefusedWithoutWrites(
  db: PrismaClient,
  change: () => Promise<unknown>,
): Promise<AppError> {
  const before = await countEverything(db);
  const error = await change().then(
    () => null,
    (caught: unknown) => caught,
  );
  if (!isAppError(error)) {
    throw new Error(`expected the change to be refused with an AppError, got ${String(error)}`);
  }
  expect(await countEverything(db)).toEqual(before);
  return error;
}

/** The newest audit entries, newest first. */
export async function latestAuditEntries(db: PrismaClient, take = 1) {
  return db.auditEntry.findMany({
    orderBy: [{ at: "desc" }, { id: "desc" }],
    take,
    select: {
      id: true,
      actorType: true,
      actorId: true,
      actorName: true,
      action: true,
      entityType: true,
      entityId: true,
      customerId: true,
      before: true,
      after: true,
      reason: true,
      requestId: true,
      policyVersion: true,
    },
  });
}

/**
 * Runs a change that must succeed and write exactly one audit entry; returns its result, that
 * entry, and the fingerprints before and after.
 */
export async function expectOneAuditEntry<Result>(db: PrismaClient, change: () => Promise<Result>) {
  const before = await countEverything(db);
  const result = await change();
  const after = await countEverything(db);
  expect(after.audit).toBe((before.audit ?? 0) + 1);
  const [entry] = await latestAuditEntries(db);
  if (entry === undefined) throw new Error("no audit entry");
  return { result, entry, before, after };
}

/**
 * The latest version's whole compiled snapshot, assembled from its stored entries and parsed
 * (checksum verified), with the entry set's checksum checked against the version's.
 */
export async function latestSnapshot(db: PrismaClient): Promise<TSnapshot> {
  const snapshot = await readCompiledSnapshot("all", { db });
  const parsed = parseSnapshot(JSON.stringify(snapshot));
  if (!parsed.ok) throw new Error(`stored snapshot is invalid: ${parsed.errors[0]?.message}`);
  const row = await db.policyVersion.findFirstOrThrow({
    orderBy: { version: "desc" },
    select: { checksum: true },
  });
  expect(PolicyState.fromSnapshot(parsed.value).checksum).toBe(row.checksum);
  return parsed.value;
}
