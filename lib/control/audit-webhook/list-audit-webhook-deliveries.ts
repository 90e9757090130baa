/**
 * The audit webhook's latest deliveries as the console shows them: the newest `audit.webhook`
 * outbox rows (deliver-audit-webhook.ts sends them oldest first), each with its audit entry's
 * action, and how many still wait. Read-only; admins only, like the settings (the rows' errors
 * may quote the receiver's answer).
 */
import { z } from "zod";
import type { ReadDeps } from "../deps";
import { AUDIT_WEBHOOK_TOPIC, ZAuditWebhookPayload } from "../outbox/outbox";
import { isoOf } from "../stored";

/** Where one entry stands: taken by the receiver, not tried yet, or failed and to be retried. */
export type AuditWebhookDeliveryState = "sent" | "waiting" | "retrying";

export interface AuditWebhookDeliveryRecord {
  /** The audit entry's id, also the `Limitplane-Delivery` header. */
  readonly auditEntryId: string;
  /** The entry's action ("tier.update"); null when the entry cannot be read. */
  readonly action: string | null;
  readonly state: AuditWebhookDeliveryState;
  readonly queuedAt: string;
  /** When the receiver took it; null until then. */
  readonly sentAt: string | null;
  readonly attempts: number;
  /** The last failure's words (the receiver's answer, never the URL); null after a success. */
  readonly lastError: string | null;
  /** When the next attempt may start; null once sent. */
  readonly nextAttemptAt: string | null;
}

export interface AuditWebhookDeliveries {
  /** Newest first. */
  readonly deliveries: readonly AuditWebhookDeliveryRecord[];
  /** Entries not yet taken by the receiver, all of them (not only those listed). */
  readonly waiting: number;
}

export const ZListAuditWebhookDeliveriesOptions = z.strictObject({
  /** How many of the newest rows. */
  limit: z
    .number({ error: "limit must be a number" })
    .int({ error: "limit must be a whole number" })
    .min(1, { error: "limit must be at least 1" })
    .max(100, { error: "limit must be at most 100" })
    .default(10),
});
export type ListAuditWebhookDeliveriesOptions = z.input<typeof ZListAuditWebhookDeliveriesOptions>;

export async function listAuditWebhookDeliveries(
  options: ListAuditWebhookDeliveriesOptions,
  deps: ReadDeps,
): Promise<AuditWebhookDeliveries> {
  const { limit } = ZListAuditWebhookDeliveriesOptions.parse(options);
  const [rows, waiting] = await Promise.all([
    deps.db.outboxEvent.findMany({
      where: { topic: AUDIT_WEBHOOK_TOPIC },
      orderBy: { id: "desc" },
      take: limit,
      select: {
        payload: true,
        createdAt: true,
        publishedAt: true,
        attempts: true,
        lastError: true,
        nextAttemptAt: true,
      },
    }),
    deps.db.outboxEvent.count({ where: { topic: AUDIT_WEBHOOK_TOPIC, publishedAt: null } }),
  ]);
  const entryIds = rows.flatMap((row) => {
    const parsed = ZAuditWebhookPayload.safeParse(row.payload);
    return parsed.success ? [parsed.data.auditEntryId] : [];
  });
  const entries = await deps.db.auditEntry.findMany({
    where: { id: { in: entryIds.map((id) => BigInt(id)) } },
    select: { id: true, action: true },
  });
  const actions = new Map(entries.map((entry) => [entry.id.toString(), entry.action]));
  return {
    waiting,
    deliveries: rows.map((row) => {
      const parsed = ZAuditWebhookPayload.safeParse(row.payload);
      const auditEntryId = parsed.success ? parsed.data.auditEntryId : "?";
      const isSent = row.publishedAt !== null;
      return {
        auditEntryId,
        action: actions.get(auditEntryId) ?? null,
        state: isSent ? "sent" : row.lastError === null ? "waiting" : "retrying",
        queuedAt: isoOf(row.createdAt),
        sentAt: row.publishedAt === null ? null : isoOf(row.publishedAt),
        attempts: row.attempts,
        lastError: row.lastError,
        nextAttemptAt: isSent ? null : isoOf(row.nextAttemptAt),
      };
    }),
  };
}
