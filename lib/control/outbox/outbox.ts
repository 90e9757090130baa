/**
 * The transactional outbox: side effects recorded in the same transaction as the change that
 * causes them, performed after commit, in id order, by whoever drains the topic. A crash between
 * commit and the side effect loses nothing: the row stays until it is marked published.
 */
import { z } from "zod";
import type { Prisma } from "@/lib/generated/prisma/client";

/** A new policy version to publish to Redis; payload {@link ZPolicySnapshotPayload}. */
export const POLICY_SNAPSHOT_TOPIC = "policy.snapshot";

/**
 * An audit entry to POST to the audit webhook; payload {@link ZAuditWebhookPayload}. Queued by
 * `writeAuditEntry` in the entry's own transaction while a webhook is set
 * (audit-webhook/deliver-audit-webhook.ts sends them, in id order).
 */
export const AUDIT_WEBHOOK_TOPIC = "audit.webhook";

/**
 * Postgres NOTIFY channel told the topic of every new outbox row, at commit. The worker LISTENs on
 * it so publication does not wait for a poll; a poll remains as the safety net.
 */
export const OUTBOX_NOTIFY_CHANNEL = "limitplane_outbox";

export const ZPolicySnapshotPayload = z.strictObject({
  version: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
});
export type PolicySnapshotPayload = z.output<typeof ZPolicySnapshotPayload>;

export const ZAuditWebhookPayload = z.strictObject({
  /** The audit entry's id, as a decimal string (a bigint). */
  auditEntryId: z.string().regex(/^\d{1,19}$/),
});

/** Records a side effect in the caller's transaction, and wakes the worker when it commits. */
export async function enqueueOutboxEvent(
  tx: Prisma.TransactionClient,
  topic: string,
  payload: Prisma.InputJsonValue,
): Promise<void> {
  await tx.outboxEvent.create({ data: { topic, payload }, select: { id: true } });
  // Delivered only if and when the transaction commits.
  await tx.$executeRaw`SELECT pg_notify(${OUTBOX_NOTIFY_CHANNEL}, ${topic})`;
}
