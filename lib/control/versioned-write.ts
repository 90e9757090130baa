/**
 * The one way an existing entity is updated or deleted: the `write` of a change runner
 * (`runPolicyChange`, `runAuditedChange`), which holds the transaction and writes the audit entry
 * from what this returns, so the read that guards the change, the version check, the write and
 * the audit entry commit or roll back together:
 *
 * 1. the entity is read inside the transaction (and under the runner's lock); each entity's record
 *    module describes it (`tierEntity` in tier/tier-record.ts, ...);
 * 2. a stale `expectedVersion` is refused with VERSION_CONFLICT, saying what changed meanwhile
 *    and who changed it (version-conflict.ts);
 * 3. `apply` checks what else guards the change and writes it (incrementing `version`, or
 *    deleting the row);
 * 4. the audit entry's `before` is the entity as read; its `after` is what `apply` wrote.
 */
import type { Prisma } from "@/lib/generated/prisma/client";
import type { AuditEntityType } from "./audit/audit-actions";
import { AppError } from "./errors";
import { assertExpectedVersion } from "./version-conflict";

type Tx = Prisma.TransactionClient;

/** An entity with a `version` column, as the change runners' writes find, check and record it. */
export interface VersionedEntity<Current> {
  /** Reads it inside the transaction, or throws NOT_FOUND. */
  find(tx: Tx, nowMs: number): Promise<Current>;
  readonly entityType: AuditEntityType;
  readonly entityId: string;
  /** How messages name it (`tier "pro"`); a function when the name comes from the row. */
  readonly label: string | ((current: Current) => string);
  /** The customer it belongs to, for the audit entry's customer history. @default null */
  readonly customerId?: (current: Current) => string | null;
  /** The entity as its audit entries record it (never a secret), `version` included. */
  view(record: Current): { readonly version: number };
}

export interface VersionedApply<Value> {
  /** The audit entry's `after`: the entity as written, null for a deletion. */
  readonly after: unknown;
  /** What the service returns. */
  readonly value: Value;
  /** For `runPolicyChange`: validate the resulting policy although the snapshot is unaffected. */
  readonly checkPolicy?: boolean;
  /**
   * Where the audit entry is recorded instead of on the entity (a promotion is recorded on the
   * rule it replaced), with that entity's `before`.
   */
  readonly recordedOn?: {
    readonly entityType: AuditEntityType;
    readonly entityId: string;
    readonly before: unknown;
  };
}

/**
 * The write of an update or a delete of `entity`, based on its `expectedVersion`: `apply` checks
 * what else guards the change and writes it. What it returns is what both runners' `write`
 * return: the audit entry's fields and the service's value.
 */
export function versionedWrite<Current, Value>(
  entity: VersionedEntity<Current>,
  expectedVersion: number,
  apply: (tx: Tx, current: Current, nowMs: number) => Promise<VersionedApply<Value>>,
) {
  return async (tx: Tx, nowMs: number) => {
    const current = await entity.find(tx, nowMs);
    const before = entity.view(current);
    await assertExpectedVersion(
      tx,
      {
        entityType: entity.entityType,
        entityId: entity.entityId,
        label: typeof entity.label === "string" ? entity.label : entity.label(current),
        current: before,
      },
      expectedVersion,
    );
    const { recordedOn, ...applied } = await apply(tx, current, nowMs);
    return {
      entityId: entity.entityId,
      customerId: entity.customerId?.(current) ?? null,
      before,
      ...recordedOn,
      ...applied,
    };
  };
}

/**
 * Whether a versioned write was refused because the entity changed (VERSION_CONFLICT) or was
 * deleted (NOT_FOUND) since the caller read it. A job that writes from its own earlier read
 * skips such an entity: its next run reads it again.
 */
export function isChangedSinceRead(error: unknown): boolean {
  return (
    error instanceof AppError && (error.code === "VERSION_CONFLICT" || error.code === "NOT_FOUND")
  );
}
