import type { Prisma } from "@/lib/generated/prisma/client";
import type { AuditAction } from "../audit/audit-actions";
import type { TChangeContext } from "../change-context";
import type { ControlDeps } from "../deps";
import { type ChangeReceipt, runPolicyChange, type Tx } from "../policy/run-policy-change";
import { auditView } from "../stored";
import { versionedWrite } from "../versioned-write";
import {
  findStagedChange,
  type StagedChangeRecord,
  stagedChangeEntity,
  stagedChangeSelect,
  toStagedChangeRecord,
} from "./staged-change-record";

/** One verb on an existing staged change: what it writes besides the row's own fields. */
export interface StagedChangeVerb {
  readonly action: AuditAction;
  /** False for verbs that change no slice (pause, resume, hold): no policy version. */
  readonly affectsSnapshot: boolean;
  /** Checks the state and writes whatever else the verb changes; returns the row's update. */
  apply(
    tx: Tx,
    current: StagedChangeRecord,
    nowMs: number,
  ): Promise<{ readonly data: Prisma.StagedChangeUpdateInput; readonly extra?: object }>;
}

/**
 * Runs a verb as one audited change: the row read and its `expectedVersion` checked in the
 * transaction, the verb's writes, the row updated, and one audit entry (before and after).
 */
export async function runStagedChangeVerb(
  deps: ControlDeps,
  ctx: TChangeContext,
  target: { readonly id: string; readonly expectedVersion: number },
  verb: StagedChangeVerb,
): Promise<{ readonly stagedChange: StagedChangeRecord } & ChangeReceipt> {
  return runPolicyChange(deps, ctx, {
    action: verb.action,
    entityType: "staged-change",
    affectsSnapshot: verb.affectsSnapshot,
    focus: null,
    write: versionedWrite(
      stagedChangeEntity(target.id),
      target.expectedVersion,
      async (tx, current, nowMs) => {
        const { data, extra } = await verb.apply(tx, current, nowMs);
        const row = await tx.stagedChange.update({
          where: { id: target.id },
          data,
          select: stagedChangeSelect,
        });
        const stagedChange = toStagedChangeRecord(row);
        return {
          after: { ...auditView(stagedChange), ...extra },
          value: { stagedChange },
        };
      },
    ),
  });
}

/** Sets the candidate's slice to the step's: what the enforcers apply. */
export async function setSlice(tx: Tx, id: string, sliceBasisPoints: number): Promise<void> {
  await tx.dryRunCandidate.update({
    where: { id },
    data: { sliceBasisPoints, version: { increment: 1 } },
    select: { id: true },
  });
}

export { findStagedChange };
