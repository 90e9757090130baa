/**
 * How a change that is not part of the policy (an operator, an API token) is made: the same
 * shape as `runPolicyChange`, without policy versions or publication. One Prisma interactive
 * transaction at READ COMMITTED:
 *
 * 1. optionally an advisory lock, so changes of one kind apply one at a time (operators: the
 *    "at least one enabled admin" rule is checked against what the last change committed);
 * 2. the service's `write`: read what guards the change (existence, expected version), write it;
 * 3. exactly one audit entry: actor, action, entity, before, after, reason, request id.
 *
 * Any failure rolls both back. `before` and `after` are what the audit log shows: services pass
 * records that hold no secret (never a password hash or token hash, never a token).
 */
import { Prisma, type PrismaClient } from "@/lib/generated/prisma/client";
import type { TChangeContext } from "../change-context";
import { AppError } from "../errors";
import { isRetryableTransactionError } from "../prisma-errors";
import { jsonColumn } from "../stored";
import type { AuditAction, AuditEntityType } from "./audit-actions";

export type AuditTx = Prisma.TransactionClient;

export interface AuditedChange<Value> {
  readonly action: AuditAction;
  readonly entityType: AuditEntityType;
  /** Taken first, inside the transaction. */
  lock?(tx: AuditTx): Promise<void>;
  /** Reads what guards the change and writes it. */
  write(tx: AuditTx, nowMs: number): Promise<AuditedWrite<Value>>;
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
  readonly nowMs: () => number;
}

const MAX_ATTEMPTS = 3;

export async function runAuditedChange<Value extends object>(
  deps: AuditedChangeDeps,
  ctx: TChangeContext,
  change: AuditedChange<Value>,
): Promise<Value & AuditReceipt> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await deps.db.$transaction(
        async (tx) => {
          await change.lock?.(tx);
          const written = await change.write(tx, deps.nowMs());
          const audit = await tx.auditEntry.create({
            data: {
              actorType: ctx.actor.type,
              actorId: ctx.actor.id,
              actorName: ctx.actor.name,
              action: change.action,
              entityType: change.entityType,
              entityId: written.entityId,
              customerId: null,
              before: jsonColumn(written.before),
              after: jsonColumn(written.after),
              reason: ctx.reason,
              requestId: ctx.requestId ?? null,
              policyVersion: null,
            },
            select: { id: true },
          });
          return { ...written.value, auditEntryId: audit.id.toString() };
        },
        {
          isolationLevel: Prisma.TransactionIsolationLevel.ReadCommitted,
          maxWait: 10_000,
          timeout: 15_000,
        },
      );
    } catch (error: unknown) {
      if (!isRetryableTransactionError(error)) throw error;
      if (attempt < MAX_ATTEMPTS) continue;
      throw new AppError(
        "CONFLICT",
        "The change collided with other changes being made at the same moment; nothing was saved. Try again.",
        { cause: error },
      );
    }
  }
}
