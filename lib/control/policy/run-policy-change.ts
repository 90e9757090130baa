/**
 * How every policy change is made. One Prisma interactive transaction at READ COMMITTED, run by
 * `runAuditedTransaction` (its retries, its options, its one audit entry):
 *
 * 1. take the policy-change advisory lock, so changes apply one at a time (READ COMMITTED, not
 *    REPEATABLE READ: each statement after the lock then sees every change committed before it;
 *    a repeatable-read snapshot would date from before the wait);
 * 2. the service's `write`: read what guards the change (existence, expected version,
 *    references), then write it;
 * 3. validate what the change touches, with the whole document's rules (references, duplicates,
 *    costs, incident overlaps and guardrails) on the slice they can involve: one customer's
 *    overrides and incidents for a customer change; the core (tiers, classes, settings,
 *    candidates) with every current incident, and any override a cost change would break, for a
 *    core change (`stored-policy.ts`). The whole policy is never read back;
 * 4. compile the slice's entries and compare them with the stored ones (`entry-set.ts`); when they
 *    differ, the change gets version = latest + 1, whose delta is exactly the entries that
 *    differ (a display-name edit changes no entry and publishes nothing);
 * 4b. ask the approval gate (approval/approval-gate.ts): a change that needs a second person is
 *    refused unless it is the approval of its change request, whose decision is then recorded
 *    in this same transaction;
 * 5. write exactly one audit entry (actor, action, entity, before, after, reason, request id and
 *    the version produced);
 * 6. for a new version: the changed entries, the version row (checksum, delta) and one outbox
 *    row, which the publisher turns into Redis.
 *
 * Any failure rolls everything back: no change, no audit entry, no version, no outbox row. After
 * commit, the new version is published at once when possible; the worker guarantees it
 * otherwise. `published` then says whether the version is in Redis, whoever published it.
 */
import {
  compileEntries,
  MAX_DELTA_CHANGES,
  parsePolicyDocument,
} from "@limitplane/enforcer/policy";
import type { Prisma } from "@/lib/generated/prisma/client";
import { gateApproval } from "../approval/approval-gate";
import type { AuditAction, AuditEntityType } from "../audit/audit-actions";
import { runAuditedTransaction, writeAuditEntry } from "../audit/audited-transaction";
import type { TChangeContext } from "../change-context";
import type { ControlDeps } from "../deps";
import { AppError } from "../errors";
import { lockPolicyChanges } from "../locks";
import { isVersionPublished } from "../outbox/publish-pending-snapshots";
import {
  CORE_KINDS,
  diffEntries,
  type PlannedVersion,
  planVersion,
  writeVersion,
} from "./entry-set";
import {
  overridesBelowCost,
  type PolicyEntityRef,
  type PolicyReadScope,
  policyValidationError,
  readStoredPolicy,
} from "./stored-policy";

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
  /**
   * What the change can touch: `customer` (one customer's overrides and incidents, and its
   * registry row: `WrittenChange.customerId` names it) or `core` (tiers, endpoint classes,
   * settings, candidates). `costs`: a core change that may raise an endpoint class's cost, so
   * overrides too small for it are looked for (one query over the overrides).
   * @default "core"
   */
  readonly touches?: "customer" | "core" | "core-and-costs";
  /** Reads what guards the change and writes it. Runs with the policy-change lock held. */
  write(tx: Tx, nowMs: number): Promise<WrittenChange<Value>>;
  /**
   * How long the transaction may take, waiting for the policy-change lock included: changes apply
   * one at a time, so under a burst of changes (or on a busy host) a change first waits its turn.
   * @default 60_000
   */
  readonly timeoutMs?: number;
}

/** A change's default deadline, its wait for the policy-change lock included. */
const POLICY_CHANGE_TIMEOUT_MS = 60_000;

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
  /**
   * The change's own entries, when it computed them (an import: the whole set). Otherwise they
   * are compiled from the slice the change touches.
   */
  readonly entries?: ComputedEntries;
  /** True when nothing at all was written: the change commits nothing and returns `unchanged`. */
  readonly isNoChange?: boolean;
}

/** The version a change planned itself (see `WrittenChange.entries`); null: nothing differs. */
export interface ComputedEntries {
  readonly planned: PlannedVersion | null;
  /** Bytes of the whole set, recorded for a version too large for a delta. */
  readonly wholeSetBytes?: number;
}

/** What every mutating service returns besides its value. */
export interface ChangeReceipt {
  /** The id of the change's audit entry (a bigint, as decimal text). */
  readonly auditEntryId: string;
  /** The policy version the change produced; null when enforcers see no difference. */
  readonly policyVersion: number | null;
  /**
   * Whether the new version was in Redis when the service returned, whoever published it (this
   * request or the worker). False when there is no new version, or while Redis is unreachable
   * (the worker publishes it when Redis returns).
   */
  readonly published: boolean;
}

/** What a change returns when it found nothing to change (an identical import). */
export interface NoChangeReceipt {
  readonly auditEntryId: null;
  readonly policyVersion: null;
  readonly published: false;
  readonly isNoChange: true;
}

class NothingChanged extends Error {
  constructor(readonly value: object) {
    super("nothing changed");
  }
}

/** Runs `change` for `ctx` (parsed with `parseChange`). See the header for the steps. */
export async function runPolicyChange<Value extends object>(
  deps: ControlDeps,
  ctx: TChangeContext,
  change: PolicyChange<Value>,
): Promise<Value & ChangeReceipt> {
  const result = await runPolicyChangeOrNothing(deps, ctx, change);
  if ("isNoChange" in result) {
    throw new Error(`${change.action} reported no change, which only an import may do`);
  }
  return result;
}

/** {@link runPolicyChange} for a change that may find nothing to do (an import). */
export async function runPolicyChangeOrNothing<Value extends object>(
  deps: ControlDeps,
  ctx: TChangeContext,
  change: PolicyChange<Value>,
): Promise<(Value & ChangeReceipt) | (Value & NoChangeReceipt)> {
  try {
    const committed = await runAuditedTransaction(
      deps.db,
      { timeoutMs: change.timeoutMs ?? POLICY_CHANGE_TIMEOUT_MS },
      async (tx) => {
        await lockPolicyChanges(tx);
        const nowMs = deps.clock.nowMs();
        const written = await change.write(tx, nowMs);
        if (written.isNoChange === true) throw new NothingChanged(written.value);
        const approval = await gateApproval(
          tx,
          ctx,
          {
            action: change.action,
            entityType: written.entityType ?? change.entityType,
            entityId: written.entityId,
            before: written.before,
            after: written.after,
            changedEntries: changedEntryCount(written.entries),
          },
          nowMs,
          deps.auditKey,
        );
        const planned =
          change.affectsSnapshot || written.checkPolicy === true
            ? await validateAndPlan(tx, change, written, nowMs)
            : null;
        const auditEntryId = await writeAuditEntry(
          tx,
          ctx,
          {
            action: change.action,
            entityType: written.entityType ?? change.entityType,
            entityId: written.entityId,
            customerId: written.customerId,
            before: written.before,
            after: written.after,
            policyVersion: planned?.version ?? null,
          },
          deps.auditKey,
        );
        if (planned !== null) {
          await writeVersion(tx, planned, auditEntryId, {
            wholeSetBytes: written.entries?.wholeSetBytes,
          });
        }
        await approval?.finish(tx, auditEntryId, planned?.version ?? null);
        return {
          written,
          auditEntryId: auditEntryId.toString(),
          version: planned?.version ?? null,
        };
      },
    );
    const published =
      committed.version !== null && deps.publisher !== null
        ? await isVersionPublished(deps.publisher, committed.version)
        : false;
    return {
      ...committed.written.value,
      auditEntryId: committed.auditEntryId,
      policyVersion: committed.version,
      published,
    };
  } catch (error: unknown) {
    if (error instanceof NothingChanged) {
      return {
        ...(error.value as Value),
        auditEntryId: null,
        policyVersion: null,
        published: false,
        isNoChange: true,
      };
    }
    throw error;
  }
}

/** How many entries a change that planned its own version (an import) changes; null for others. */
function changedEntryCount(entries: ComputedEntries | undefined): number | null {
  if (entries === undefined) return null;
  const planned = entries.planned;
  if (planned === null) return 0;
  // Too many for a delta: the changes were counted in SQL but not listed.
  return planned.delta === null && planned.changes.length === 0
    ? MAX_DELTA_CHANGES + 1
    : planned.changes.length;
}

/**
 * Validates the slice the change touches; for a policy change, plans the new version from the
 * entries that differ, or returns null when none does.
 */
async function validateAndPlan<Value>(
  tx: Tx,
  change: PolicyChange<Value>,
  written: WrittenChange<Value>,
  nowMs: number,
): Promise<PlannedVersion | null> {
  if (written.entries !== undefined) return written.entries.planned;
  const touches = change.touches ?? "core";
  const customerId = written.customerId;
  if (touches === "customer" && customerId === null) {
    throw new Error(`${change.action} touches one customer but named none`);
  }
  const scope: PolicyReadScope =
    touches === "customer" && customerId !== null
      ? { kind: "customer", customerId }
      : {
          kind: "core",
          overrideScopes: touches === "core-and-costs" ? await overridesBelowCost(tx) : [],
        };
  const stored = await readStoredPolicy(tx, {
    nowMs,
    customers: "referenced",
    last: change.focus,
    scope,
  });
  if (stored === null) {
    if (!change.affectsSnapshot) return null;
    throw noPolicyYet();
  }
  const parsed = parsePolicyDocument(stored.input);
  if (!parsed.ok) throw policyValidationError(stored, parsed.errors, change.focus);
  if (!change.affectsSnapshot) return null;
  const compiled = compileEntries(parsed.value, nowMs);
  const changes =
    scope.kind === "customer"
      ? await diffEntries(
          tx,
          compiled.filter(
            (entry) =>
              (entry.kind === "customer-override" || entry.kind === "incident") &&
              entry.value.customerId === scope.customerId,
          ),
          { kinds: [], customerIds: [scope.customerId] },
          nowMs,
        )
      : await diffEntries(
          tx,
          compiled.filter((entry) => CORE_KINDS.includes(entry.kind)),
          { kinds: CORE_KINDS, customerIds: [] },
          nowMs,
        );
  return changes.length === 0 ? null : planVersion(tx, changes, nowMs);
}

export function noPolicyYet(): AppError {
  return new AppError(
    "CONFLICT",
    "There is no policy yet: import one first (npm run db:seed imports the example policy).",
  );
}
