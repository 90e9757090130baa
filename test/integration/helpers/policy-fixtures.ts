/** Factories and probes shared by the policy storage tests. */
import { randomBytes } from "node:crypto";
import type { ChangeContext } from "@/lib/control/change-context";
import type { ControlDeps } from "@/lib/control/control-deps";
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
  return { db, publisher: null, nowMs };
}

/** Imports the example policy (incidents re-dated to now) as the starting point. */
export async function importExamplePolicy(deps: ControlDeps): Promise<void> {
  await importPolicy(
    examplePolicyForSeed(deps.nowMs()),
    operatorContext("start from the example"),
    deps,
  );
}

/** The number of rows in every table, and the latest policy version. */
export async function countEverything(db: PrismaClient): Promise<Record<string, number>> {
  const [
    settings,
    tiers,
    endpointClasses,
    customers,
    customerOverrides,
    incidents,
    candidates,
    versions,
    outbox,
    audit,
    latest,
  ] = await Promise.all([
    db.policySettings.count(),
    db.tier.count(),
    db.endpointClass.count(),
    db.customer.count(),
    db.customerOverride.count(),
    db.incidentOverride.count(),
    db.dryRunCandidate.count(),
    db.policyVersion.count(),
    db.outboxEvent.count(),
    db.auditEntry.count(),
    db.policyVersion.findFirst({ orderBy: { version: "desc" }, select: { version: true } }),
  ]);
  return {
    settings,
    tiers,
    endpointClasses,
    customers,
    customerOverrides,
    incidents,
    candidates,
    versions,
    outbox,
    audit,
    latestVersion: latest?.version ?? 0,
  };
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
