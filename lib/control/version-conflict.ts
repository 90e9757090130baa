/**
 * Optimistic concurrency: every update or delete names the version of the entity it was based on.
 * When that is not the current version, the change is refused with VERSION_CONFLICT, and the error
 * says what changed meanwhile and who changed it, read from the audit log, with the current entity
 * in `details.current` so a client can show it and let the operator apply their edit again.
 */
import type { AuditEntityType } from "./audit/audit-actions";
import { AppError } from "./errors";
import { describeChanges, diffJson, type JsonChange } from "./json-diff";
import type { Db } from "./stored";

export interface VersionedEntity {
  readonly entityType: AuditEntityType;
  readonly entityId: string;
  /** How messages name it: `tier "pro"`. */
  readonly label: string;
  /** The entity now, as its audit entries record it (with `version`). */
  readonly current: { readonly version: number };
}

interface LaterChange {
  readonly action: string;
  readonly actorName: string;
  readonly actorType: string;
  readonly at: string;
  readonly reason: string;
}

function versionOf(value: unknown): number | null {
  if (typeof value !== "object" || value === null || !("version" in value)) return null;
  return typeof value.version === "number" ? value.version : null;
}

/** Refuses the change unless `expectedVersion` is the entity's current version. */
export async function assertExpectedVersion(
  db: Db,
  entity: VersionedEntity,
  expectedVersion: number,
): Promise<void> {
  const currentVersion = entity.current.version;
  if (currentVersion === expectedVersion) return;
  const entries = await db.auditEntry.findMany({
    where: { entityType: entity.entityType, entityId: entity.entityId },
    orderBy: [{ at: "desc" }, { id: "desc" }],
    take: 50,
    select: {
      action: true,
      actorName: true,
      actorType: true,
      at: true,
      reason: true,
      before: true,
    },
  });
  // Entries that changed the entity from the caller's version onwards, newest first.
  const later = entries.filter((entry) => (versionOf(entry.before) ?? 0) >= expectedVersion);
  const base = later.find((entry) => versionOf(entry.before) === expectedVersion);
  const changes: JsonChange[] =
    base === undefined
      ? []
      : diffJson(base.before, entity.current).filter((change) => change.path !== "version");
  const changedBy: LaterChange[] = later.map((entry) => ({
    action: entry.action,
    actorName: entry.actorName,
    actorType: entry.actorType,
    at: entry.at.toISOString(),
    reason: entry.reason,
  }));
  const last = changedBy[0];
  const parts = [
    expectedVersion > currentVersion
      ? `This change was based on version ${expectedVersion} of ${entity.label}, but its current version is ${currentVersion}.`
      : `${capitalize(entity.label)} changed after version ${expectedVersion}, which this change was based on; it is now version ${currentVersion}.`,
  ];
  if (last !== undefined) {
    parts.push(
      `Last change: ${last.action} by ${last.actorName} (${last.actorType}) at ${last.at}, reason: "${last.reason}".`,
    );
  }
  if (changes.length > 0) parts.push(`What changed: ${describeChanges(changes)}.`);
  parts.push("Review the current values and make your change again.");
  throw new AppError("VERSION_CONFLICT", parts.join(" "), {
    details: {
      entityType: entity.entityType,
      entityId: entity.entityId,
      expectedVersion,
      currentVersion,
      current: entity.current,
      changes,
      changedBy,
    },
  });
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
