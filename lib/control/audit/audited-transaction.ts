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
import { lockAuditChain } from "../locks";
import { AUDIT_WEBHOOK_TOPIC, enqueueOutboxEvent } from "../outbox/outbox";
import { isRetryableTransactionError } from "../prisma-errors";
import { jsonColumn } from "../stored";
import type { AuditAction, AuditEntityType } from "./audit-actions";
import { type ChainedContent, chainHashOf, chainMacOf, DEV_AUDIT_KEY } from "./audit-chain";

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

/**
 * Writes one audit entry in `tx`, chained onto the last one (audit-chain.ts), and returns its id.
 * Takes the AUDIT_CHAIN lock, held until `tx` ends; then draws the id and the time and reads the
 * previous hash, in one statement that sees every entry committed before the lock was granted.
 * `auditKey` signs the hash (AUDIT_KEY; @default DEV_AUDIT_KEY).
 */
export async function writeAuditEntry(
  tx: AuditTx,
  ctx: TChangeContext,
  row: AuditRow,
  auditKey: string = DEV_AUDIT_KEY,
): Promise<bigint> {
  await lockAuditChain(tx);
  const [head] = await tx.$queryRaw<{ id: bigint; at: Date; previous: string | null }[]>`
    SELECT nextval(pg_get_serial_sequence('"AuditEntry"', 'id')) AS id,
           date_trunc('milliseconds', clock_timestamp()) AS at,
           (SELECT "chainHash" FROM "AuditEntry" WHERE "chainHash" IS NOT NULL
             ORDER BY "id" DESC LIMIT 1) AS previous`;
  if (head === undefined) throw new Error("drawing an audit entry's id returned no row");
  // Exactly what the JSON columns will hold, so a hash of what is read back matches.
  const before = storedJson(row.before);
  const after = storedJson(row.after);
  const content: ChainedContent = {
    id: head.id,
    at: head.at,
    actorType: ctx.actor.type,
    actorId: ctx.actor.id,
    actorName: ctx.actor.name,
    action: row.action,
    entityType: row.entityType,
    entityId: row.entityId,
    customerId: row.customerId,
    before,
    after,
    reason: ctx.reason,
    requestId: ctx.requestId ?? null,
    policyVersion: row.policyVersion,
  };
  const chainHash = chainHashOf(content, head.previous ?? "");
  await tx.auditEntry.create({
    data: {
      ...content,
      before: jsonColumn(before),
      after: jsonColumn(after),
      chainHash,
      chainMac: chainMacOf(chainHash, auditKey),
    },
    select: { id: true },
  });
  // The audit webhook's delivery commits with the entry or not at all (docs/audit-webhook.md).
  const webhook = await tx.auditWebhookSettings.findFirst({
    where: { id: 1, url: { not: null } },
    select: { id: true },
  });
  if (webhook !== null) {
    await enqueueOutboxEvent(tx, AUDIT_WEBHOOK_TOPIC, { auditEntryId: head.id.toString() });
  }
  return head.id;
}

/** What a nullable JSON column holds for `value` (jsonColumn's rule): an object, or null. */
function storedJson(value: unknown): unknown {
  return typeof value === "object" && value !== null ? JSON.parse(JSON.stringify(value)) : null;
}
