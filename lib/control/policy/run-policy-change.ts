/**
 * How every change is made. One Prisma interactive transaction, at READ COMMITTED:
 *
 * 1. take the policy-change advisory lock, so changes apply one at a time (READ COMMITTED, not
 *    REPEATABLE READ: each statement after the lock then sees every change committed before it;
 *    a repeatable-read snapshot would date from before the wait);
 * 2. the service's `write`: read what guards the change (existence, expected version,
 *    references), then write it;
 * 3. for a policy change, read the resulting policy back, validate ALL of it with @limitplane/enforcer/policy
 *    (references, duplicates, costs, incident overlaps and guardrails), compile the snapshot, and
 *    if what enforcers see differs from the latest version, add version = latest + 1;
 * 4. write exactly one audit entry (actor, action, entity, before, after, reason, request id and
 *    the version produced);
 * 5. for a new version: insert it, with an outbox row that the publisher turns into Redis.
 *
 * Any failure rolls everything back: no change, no audit entry, no version, no outbox row. After
 * commit, the new version is published at once when possible (best effort); the worker guarantees
 * it otherwise.
 */
import { createHash } from "node:crypto";
import { canonicalJson, compileSnapshot, parsePolicyDocument } from "@limitplane/enforcer/policy";
import { Prisma } from "@/lib/generated/prisma/client";
import type { AuditAction, AuditEntityType } from "../audit/audit-actions";
import type { TChangeContext } from "../change-context";
import type { ControlDeps } from "../control-deps";
import { AppError } from "../errors";
import { lockPolicyChanges } from "../locks";
import { enqueueOutboxEvent, POLICY_SNAPSHOT_TOPIC } from "../outbox/outbox";
import { publishPendingSnapshots } from "../outbox/publish-pending-snapshots";
import { isRetryableTransactionError } from "../prisma-errors";
import { jsonColumn, toJson } from "../stored";
import { type PolicyEntityRef, policyValidationError, readStoredPolicy } from "./stored-policy";

export type Tx = Prisma.TransactionClient;

export interface PolicyChange<Value> {
  readonly action: AuditAction;
  readonly entityType: AuditEntityType;
  /**
   * - true: the change can alter what enforcers see: validate the resulting policy, compile it,
   *   and add a version when the compiled policy differs from the latest one.
   * - false: it cannot (the customer registry, which the snapshot does not contain; the record of
   *   an expiry, which enforcers apply by their own clock): never a new version; the policy is
   *   validated only when `write` asks (`checkPolicy`).
   */
  readonly affectsSnapshot: boolean;
  /** The entity whose fields the caller edits: problems in it point at the caller's fields. */
  readonly focus: PolicyEntityRef | null;
  /** Reads what guards the change and writes it. Runs with the policy-change lock held. */
  write(tx: Tx, nowMs: number): Promise<WrittenChange<Value>>;
  /** @default 15_000 */
  readonly timeoutMs?: number;
}

export interface WrittenChange<Value> {
  /** When it differs from the change's: a promotion is recorded on the rule it replaced. */
  readonly entityType?: AuditEntityType;
  readonly entityId: string;
  /** Set when the change concerns one customer: its history is then one indexed query. */
  readonly customerId: string | null;
  readonly before: unknown;
  readonly after: unknown;
  /** What the service returns. */
  readonly value: Value;
  /** For changes that do not affect the snapshot: validate the resulting policy anyway. */
  readonly checkPolicy?: boolean;
}

/** What every mutating service returns besides its value. */
export interface ChangeReceipt {
  /** The id of the change's audit entry (a bigint, as decimal text). */
  readonly auditEntryId: string;
  /** The policy version the change produced; null when enforcers see no difference. */
  readonly policyVersion: number | null;
  /**
   * Whether the new version was in Redis when the service returned. False when there is no new
   * version, or when the worker will publish it (Redis unreachable, or another publisher busy).
   */
  readonly published: boolean;
}

const MAX_ATTEMPTS = 3;

/** Runs `change` for `ctx` (parsed with `parseChange`). See the header for the steps. */
export async function runPolicyChange<Value extends object>(
  deps: ControlDeps,
  ctx: TChangeContext,
  change: PolicyChange<Value>,
): Promise<Value & ChangeReceipt> {
  for (let attempt = 1; ; attempt++) {
    try {
      const committed = await deps.db.$transaction(
        async (tx) => {
          await lockPolicyChanges(tx);
          const nowMs = deps.nowMs();
          const written = await change.write(tx, nowMs);
          const version =
            change.affectsSnapshot || written.checkPolicy === true
              ? await validateAndCompile(tx, change, nowMs)
              : null;
          const audit = await tx.auditEntry.create({
            data: {
              actorType: ctx.actor.type,
              actorId: ctx.actor.id,
              actorName: ctx.actor.name,
              action: change.action,
              entityType: written.entityType ?? change.entityType,
              entityId: written.entityId,
              customerId: written.customerId,
              before: jsonColumn(written.before),
              after: jsonColumn(written.after),
              reason: ctx.reason,
              requestId: ctx.requestId ?? null,
              policyVersion: version?.version ?? null,
            },
            select: { id: true },
          });
          if (version !== null) {
            await tx.policyVersion.create({
              data: { ...version, auditEntryId: audit.id },
              select: { version: true },
            });
            await enqueueOutboxEvent(tx, POLICY_SNAPSHOT_TOPIC, { version: version.version });
          }
          return { written, auditEntryId: audit.id.toString(), version: version?.version ?? null };
        },
        {
          isolationLevel: Prisma.TransactionIsolationLevel.ReadCommitted,
          maxWait: 10_000,
          timeout: change.timeoutMs ?? 15_000,
        },
      );
      const published =
        committed.version !== null && deps.publisher !== null
          ? await publishNow(deps, committed.version)
          : false;
      return {
        ...committed.written.value,
        auditEntryId: committed.auditEntryId,
        policyVersion: committed.version,
        published,
      };
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

/** Best effort: true when `version` is in Redis now. Never throws. */
async function publishNow(deps: ControlDeps, version: number): Promise<boolean> {
  if (deps.publisher === null) return false;
  const outcome = await publishPendingSnapshots(deps.publisher, "try");
  return (
    (outcome.status === "published" || outcome.status === "failed") &&
    outcome.versions.some((published) => published.version === version)
  );
}

interface NewVersion {
  readonly version: number;
  readonly checksum: string;
  readonly policyChecksum: string;
  readonly snapshot: Prisma.InputJsonValue;
}

/**
 * Validates the whole resulting policy; for a policy change, compiles it and returns the new
 * version to record, or null when the compiled policy equals the latest version's.
 */
async function validateAndCompile<Value>(
  tx: Tx,
  change: PolicyChange<Value>,
  nowMs: number,
): Promise<NewVersion | null> {
  const stored = await readStoredPolicy(tx, {
    nowMs,
    customers: "referenced",
    last: change.focus,
  });
  if (stored === null) {
    if (!change.affectsSnapshot) return null;
    throw noPolicyYet();
  }
  const parsed = parsePolicyDocument(stored.input);
  if (!parsed.ok) throw policyValidationError(stored, parsed.errors, change.focus);
  if (!change.affectsSnapshot) return null;
  const latest = await tx.policyVersion.findFirst({
    orderBy: { version: "desc" },
    select: { version: true, policyChecksum: true },
  });
  const version = (latest?.version ?? 0) + 1;
  const snapshot = compileSnapshot(parsed.value, {
    version,
    compiledAt: new Date(nowMs).toISOString(),
  });
  const policyChecksum = hashPolicy(snapshot.policy);
  if (latest !== null && latest.policyChecksum === policyChecksum) return null;
  return {
    version,
    checksum: snapshot.checksum,
    policyChecksum,
    snapshot: toJson(snapshot),
  };
}

/** SHA-256 of the canonical JSON of a compiled policy: equal policies, equal hashes. */
function hashPolicy(policy: unknown): string {
  return createHash("sha256").update(canonicalJson(policy)).digest("hex");
}

export function noPolicyYet(): AppError {
  return new AppError(
    "CONFLICT",
    "There is no policy yet: import one first (npm run db:seed imports the example policy).",
  );
}
