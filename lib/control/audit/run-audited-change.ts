/**
 * How a change that is not part of the policy (an operator, an API token) is made: the same
 * runner as `runPolicyChange` (`runAuditedTransaction`: one transaction at READ COMMITTED, its
 * retries and its one audit entry), without policy versions or publication:
 *
 * 1. optionally an advisory lock, so changes of one kind apply one at a time (operators: the
 *    "at least one enabled admin" rule is checked against what the last change committed);
 * 2. the service's `write`: read what guards the change (existence, expected version), write it;
 * 3. exactly one audit entry: actor, action, entity, before, after, reason, request id.
 *
 * Any failure rolls both back. `before` and `after` are what the audit log shows: services pass
 * records that hold no secret (never a password hash or token hash, never a token).
 */

import type { Clock } from "@limitplane/enforcer/limiter";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import type { TChangeContext } from "../change-context";
import type { AuditAction, AuditEntityType } from "./audit-actions";
import { type AuditTx, runAuditedTransaction, writeAuditEntry } from "./audited-transaction";

export type { AuditTx };

export interface AuditedChange<Value> {
  readonly action: AuditAction;
  readonly entityType: AuditEntityType;
  /** Taken first, inside the transaction. */
  lock?(tx: AuditTx): Promise<void>;
  /** Reads what guards the change and writes it. */
  write(tx: AuditTx, nowMs: number): Promise<AuditedWrite<Value>>;
  /** Runs in the same transaction once the audit entry exists (to link the entity to it). */
  linkAuditEntry?(tx: AuditTx, auditEntryId: bigint, value: Value): Promise<Value>;
}

export interface AuditedWrite<Value> {
  readonly entityId: string;
  /** What the audit entry shows; never a secret. */
  readonly before: unknown;
  readonly after: unknown;
  /** What the service returns. */
  readonly value: Value;
}

/** What an audited change that is not a policy change returns besides its value. */
export interface AuditReceipt {
  /** The id of the change's audit entry (a bigint, as decimal text). */
  readonly auditEntryId: string;
}

export interface AuditedChangeDeps {
  readonly db: PrismaClient;
  readonly clock: Clock;
  /** Signs the entry's chain hash (AUDIT_KEY). @default DEV_AUDIT_KEY */
  readonly auditKey?: string;
}

export async function runAuditedChange<Value extends object>(
  deps: AuditedChangeDeps,
  ctx: TChangeContext,
  change: AuditedChange<Value>,
): Promise<Value & AuditReceipt> {
  return runAuditedTransaction(deps.db, {}, async (tx) => {
    await change.lock?.(tx);
    const written = await change.write(tx, deps.clock.nowMs());
    const auditEntryId = await writeAuditEntry(
      tx,
      ctx,
      {
        action: change.action,
        entityType: change.entityType,
        entityId: written.entityId,
        customerId: null,
        before: written.before,
        after: written.after,
        policyVersion: null,
      },
      deps.auditKey,
    );
    const value = (await change.linkAuditEntry?.(tx, auditEntryId, written.value)) ?? written.value;
    return { ...value, auditEntryId: auditEntryId.toString() };
  });
}
