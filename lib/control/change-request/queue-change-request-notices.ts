/**
 * Turns change-request events (requested, approved, rejected, withdrawn, expired; written with
 * each transition) into alert-webhook deliveries: one `AlertDelivery` per event and URL, keyed
 * `change-request:<id>:<event>`, inserted with skipDuplicates so a second worker queues nothing
 * twice. The alert webhook sender then POSTs them like any alert, with the same retries and the
 * same `Limitplane-Delivery` header. The body carries `event` (not `alert`):
 * `{ deliveryId, alertKey, episode, event: { type, summary, changeRequest }, raisedAt }`, where
 * `summary` is the requested change in the audit log's words (summarize-audit-entry.ts).
 */
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { summarizeAuditEntry } from "../audit/summarize-audit-entry";
import { toJson } from "../stored";

/** How many events one run queues. */
const BATCH = 100;

export async function queueChangeRequestNotices(
  db: PrismaClient,
  urls: readonly string[],
  nowMs: number,
): Promise<number> {
  if (urls.length === 0) return 0;
  const events = await db.changeRequestEvent.findMany({
    where: { queuedAt: null },
    orderBy: { id: "asc" },
    take: BATCH,
    select: { id: true, changeRequestId: true, event: true, payload: true, at: true },
  });
  if (events.length === 0) return 0;
  const requests = await db.changeRequest.findMany({
    where: { id: { in: [...new Set(events.map((event) => event.changeRequestId))] } },
    select: {
      id: true,
      action: true,
      entityType: true,
      entityId: true,
      diff: true,
      createdAt: true,
    },
  });
  const summaries = new Map(
    requests.map((request) => {
      const diff =
        typeof request.diff === "object" && request.diff !== null && !Array.isArray(request.diff)
          ? request.diff
          : {};
      const summary = summarizeAuditEntry({
        action: request.action,
        entityType: request.entityType,
        entityId: request.entityId,
        customerId: null,
        before: diff.before ?? null,
        after: diff.after ?? null,
        at: request.createdAt.toISOString(),
      });
      return [request.id, summary];
    }),
  );
  const now = new Date(nowMs);
  const created = await db.$transaction(async (tx) => {
    const inserted = await tx.alertDelivery.createMany({
      data: events.flatMap((event) =>
        urls.map((url) => {
          const alertKey = `change-request:${event.changeRequestId}:${event.event}`;
          return {
            alertKey,
            url,
            episode: 1,
            payload: toJson({
              alertKey,
              episode: 1,
              event: {
                type: `change-request.${event.event}`,
                summary: summaries.get(event.changeRequestId) ?? null,
                changeRequest: event.payload,
              },
              raisedAt: event.at.toISOString(),
            }),
            nextAttemptAt: now,
            createdAt: now,
            // Not an alert that can clear: nothing must reopen it.
            resolvedAt: now,
          };
        }),
      ),
      skipDuplicates: true,
    });
    await tx.changeRequestEvent.updateMany({
      where: { id: { in: events.map((event) => event.id) }, queuedAt: null },
      data: { queuedAt: now },
    });
    return inserted.count;
  });
  return created;
}
