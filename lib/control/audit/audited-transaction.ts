/**
 * The one audited-transaction runner. Every change the control plane makes, to the policy
 * (`runPolicyChange`) or not (`runAuditedChange`: operators, API tokens), runs through
 * {@link runAuditedTransaction}: one Prisma interactive transaction at READ COMMITTED, retried
 * when Postgres reports a serialization failure or deadlock, with exactly one audit entry written
 * by {@link writeAuditEntry} inside it. Any failure rolls the change and its audit entry back.
 *
 * READ COMMITTED, not REPEATABLE READ: a change that takes an advisory lock first then sees, in
 * every statement after the lock, what the last change committed; a repeatable-read snapshot
 * would date from before the wait.
 */
import { Prisma, type PrismaClient } from "@/lib/generated/prisma/client";
import type { TChangeContext } from "../change-context";
import { AppError } from "../errors";
import { isRetryableTransactionError } from "../prisma-errors";
import { jsonColumn } from "../stored";
import type { AuditAction, AuditEntityType } from "./audit-actions";

export type AuditTx = Prisma.TransactionClient;

/** Attempts before a change that keeps colliding is refused with `CONFLICT`. */
const MAX_ATTEMPTS = 3;

export interface AuditedTransactionOptions {
  /** How long the transaction may run. @default 15_000 */
  readonly timeoutMs?: number;
}

/**
 * Runs `body` in one transaction (see the header), retrying it whole on a retryable collision;
 * after {@link MAX_ATTEMPTS} collisions, `CONFLICT`. Any other error propagates unchanged.
 */
export async function runAuditedTransaction<Result>(
  db: PrismaClient,
  options: AuditedTransactionOptions,
  body: (tx: AuditTx) => Promise<Result>,
): Promise<Result> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.$transaction(body, {
        isolationLevel: Prisma.TransactionIsolationLevel.ReadCommitted,
        maxWait: 10_000,
        timeout: options.timeoutMs ?? 15_000,
      });
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

/** What one audit entry records besides who and why (`TChangeContext`). */
export interface AuditRow {
  readonly action: AuditAction;
  readonly entityType: AuditEntityType;
  readonly entityId: string;
  /** Set when the change concerns one customer: its history is then one indexed query. */
  readonly customerId: string | null;
  /** What the audit log shows; never a secret (no password or token hash, no token). */
  readonly before: unknown;
  readonly after: unknown;
  /** The policy version the change produced, or null. */
  readonly policyVersion: number | null;
}

/** Writes the change's one audit entry in `tx` and returns its id. */
export async function writeAuditEntry(
  tx: AuditTx,
  ctx: TChangeContext,
  row: AuditRow,
): Promise<bigint> {
  const audit = await tx.auditEntry.create({
    data: {
      actorType: ctx.actor.type,
      actorId: ctx.actor.id,
      actorName: ctx.actor.name,
      action: row.action,
      entityType: row.entityType,
      entityId: row.entityId,
      customerId: row.customerId,
      before: jsonColumn(row.before),
      after: jsonColumn(row.after),
      reason: ctx.reason,
      requestId: ctx.requestId ?? null,
      policyVersion: row.policyVersion,
    },
    select: { id: true },
  });
  return audit.id;
}
