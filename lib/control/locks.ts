/**
 * Postgres advisory locks, as (namespace, key) pairs of int4: the namespace keeps Limitplane's keys
 * apart from anything else sharing the database. Never reuse a key for another purpose.
 *
 * | key                    | scope       | held by                                                |
 * | ---------------------- | ----------- | ------------------------------------------------------ |
 * | `POLICY_CHANGE`        | transaction | every policy or registry change, so they apply one at  |
 * |                        |             | a time and each validates what the last one committed  |
 * | `OUTBOX_PUBLISHER`     | transaction | whoever drains the outbox to Redis, so versions go out |
 * |                        |             | in order                                               |
 * | `WORKER_LEADER`        | session     | the worker that leads (lib/worker), on its own         |
 * |                        |             | connection; released when that connection ends         |
 * | `OPERATOR_CHANGE`      | transaction | every change to operators, so "at least one enabled    |
 * |                        |             | admin" is checked against what the last one committed  |
 * | `AUDIT_CHAIN`          | transaction | every audit entry's writer, from drawing its id to     |
 * |                        |             | commit, so each entry chains onto the last committed   |
 * |                        |             | one (audit/audit-chain.ts). Taken after any other lock |
 * |                        |             | of the transaction, never before one, so no cycle      |
 *
 * Publishers to a region (REGIONS) lock `(REGION_LOCK_NAMESPACE, hashtext(region))`, one lock per
 * region, so a region whose Redis is down never holds another region's publication back.
 */
import type { Prisma } from "@/lib/generated/prisma/client";

/** "LP" */
export const LOCK_NAMESPACE = 0x4c50;

export const LOCK_KEYS = {
  POLICY_CHANGE: 1,
  OUTBOX_PUBLISHER: 2,
  WORKER_LEADER: 3,
  OPERATOR_CHANGE: 4,
  AUDIT_CHAIN: 5,
} as const;

/** Waits for the policy-change lock; it is released when the transaction ends. */
export async function lockPolicyChanges(tx: Prisma.TransactionClient): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(${LOCK_NAMESPACE}::int4, ${LOCK_KEYS.POLICY_CHANGE}::int4)`;
}

/** Takes the publisher lock: waiting for it, or only if it is free right now. */
export async function lockOutboxPublisher(
  tx: Prisma.TransactionClient,
  mode: "wait" | "try",
): Promise<boolean> {
  if (mode === "wait") {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(${LOCK_NAMESPACE}::int4, ${LOCK_KEYS.OUTBOX_PUBLISHER}::int4)`;
    return true;
  }
  const rows = await tx.$queryRaw<
    { locked: boolean }[]
  >`SELECT pg_try_advisory_xact_lock(${LOCK_NAMESPACE}::int4, ${LOCK_KEYS.OUTBOX_PUBLISHER}::int4) AS locked`;
  return rows[0]?.locked === true;
}

/** "LR": one transaction-scoped lock per region's publisher, keyed by the region's name. */
export const REGION_LOCK_NAMESPACE = 0x4c52;

/** Takes one region's publisher lock: waiting for it, or only if it is free right now. */
export async function lockRegionPublisher(
  tx: Prisma.TransactionClient,
  region: string,
  mode: "wait" | "try",
): Promise<boolean> {
  if (mode === "wait") {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(${REGION_LOCK_NAMESPACE}::int4, hashtext(${region}))`;
    return true;
  }
  const rows = await tx.$queryRaw<
    { locked: boolean }[]
  >`SELECT pg_try_advisory_xact_lock(${REGION_LOCK_NAMESPACE}::int4, hashtext(${region})) AS locked`;
  return rows[0]?.locked === true;
}

/** Waits for the operator-change lock; it is released when the transaction ends. */
export async function lockOperatorChanges(tx: Prisma.TransactionClient): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(${LOCK_NAMESPACE}::int4, ${LOCK_KEYS.OPERATOR_CHANGE}::int4)`;
}

/** Waits for the audit-chain lock; it is released when the transaction ends. */
export async function lockAuditChain(tx: Prisma.TransactionClient): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(${LOCK_NAMESPACE}::int4, ${LOCK_KEYS.AUDIT_CHAIN}::int4)`;
}
