import { type TLimitSpec, ZDryRunCandidate, ZLimitSpec } from "@limitplane/enforcer/policy";
import { z } from "zod";
import type { Prisma } from "@/lib/generated/prisma/client";
import { AppError, notFound } from "../errors";
import type { Db } from "../stored";
import { auditView, isoOf, jsonColumn, parseStored } from "../stored";
import type { VersionedEntity } from "../versioned-write";
import { type GuardState, type TStagedGuard, ZGuardState, ZStagedGuard } from "./staged-guard";
import type { TStagedStep } from "./staged-steps";

export { type TStagedStep, ZStagedStep, ZStagedSteps } from "./staged-steps";

export const STAGED_CHANGE_STATES = [
  "running",
  "paused",
  "completed",
  "aborted",
  "reverted",
] as const;
export type StagedChangeState = (typeof STAGED_CHANGE_STATES)[number];

/** States in which the candidate carries the change to the enforcers. */
export const LIVE_STATES: readonly StagedChangeState[] = ["running", "paused"];

const ZStoredStep = z.strictObject({
  sliceBasisPoints: z.number().int(),
  dwellMs: z.number().int(),
});
const ZStoredSteps = z.array(ZStoredStep);

export const stagedChangeSelect = {
  id: true,
  target: true,
  limit: true,
  previousLimit: true,
  origin: true,
  steps: true,
  stepIndex: true,
  state: true,
  stepStartedAt: true,
  pausedAt: true,
  guard: true,
  breachedWindows: true,
  lastWindowEndMs: true,
  guardState: true,
  holdNotifiedAt: true,
  endReason: true,
  endFigures: true,
  endedAt: true,
  createdBy: true,
  version: true,
  createdAt: true,
  updatedAt: true,
} satisfies Prisma.StagedChangeSelect;

type StagedChangeRow = Prisma.StagedChangeGetPayload<{ select: typeof stagedChangeSelect }>;

export interface StagedChangeRecord {
  readonly id: string;
  readonly target: string;
  readonly limit: TLimitSpec;
  /** The rule's limit when it started; null for a new per-tier endpoint limit. */
  readonly previousLimit: TLimitSpec | null;
  readonly origin: "edit" | "candidate";
  readonly steps: { sliceBasisPoints: number; dwellMs: number }[];
  readonly stepIndex: number;
  /** The current step's slice, in basis points. */
  readonly sliceBasisPoints: number;
  readonly state: StagedChangeState;
  readonly stepStartedAt: string;
  readonly pausedAt: string | null;
  readonly guard: TStagedGuard;
  readonly breachedWindows: number;
  readonly lastWindowEndMs: number | null;
  /** The guard's running state; null until the worker's first look at this step. */
  readonly guardState: GuardState | null;
  readonly holdNotifiedAt: string | null;
  readonly endReason: string | null;
  readonly endFigures: unknown;
  readonly endedAt: string | null;
  readonly createdBy: string;
  readonly version: number;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export function stagedChangeLabel(id: string): string {
  return `staged change "${id}"`;
}

export function toStagedChangeRecord(row: StagedChangeRow): StagedChangeRecord {
  const label = stagedChangeLabel(row.id);
  const steps = parseStored(ZStoredSteps, row.steps, label);
  const current = steps[row.stepIndex];
  if (current === undefined) throw new Error(`The stored ${label} has no step ${row.stepIndex}`);
  const state = STAGED_CHANGE_STATES.find((known) => known === row.state);
  if (state === undefined) throw new Error(`The stored ${label} has state ${row.state}`);
  return {
    id: row.id,
    target: parseStored(ZDryRunCandidate.shape.target, row.target, label),
    limit: parseStored(ZLimitSpec, row.limit, label),
    previousLimit:
      row.previousLimit === null ? null : parseStored(ZLimitSpec, row.previousLimit, label),
    origin: row.origin === "candidate" ? "candidate" : "edit",
    steps,
    stepIndex: row.stepIndex,
    sliceBasisPoints: current.sliceBasisPoints,
    state,
    stepStartedAt: isoOf(row.stepStartedAt),
    pausedAt: row.pausedAt === null ? null : isoOf(row.pausedAt),
    guard: parseStored(ZStagedGuard, row.guard, label),
    breachedWindows: row.breachedWindows,
    lastWindowEndMs: row.lastWindowEndMs === null ? null : Number(row.lastWindowEndMs),
    guardState: row.guardState === null ? null : parseStored(ZGuardState, row.guardState, label),
    holdNotifiedAt: row.holdNotifiedAt === null ? null : isoOf(row.holdNotifiedAt),
    endReason: row.endReason,
    endFigures: row.endFigures,
    endedAt: row.endedAt === null ? null : isoOf(row.endedAt),
    createdBy: row.createdBy,
    version: row.version,
    createdAt: isoOf(row.createdAt),
    updatedAt: isoOf(row.updatedAt),
  };
}

export async function findStagedChange(db: Db, id: string): Promise<StagedChangeRecord> {
  const row = await db.stagedChange.findUnique({ where: { id }, select: stagedChangeSelect });
  if (row === null) throw notFound("Staged change", id);
  return toStagedChangeRecord(row);
}

/** A staged change as `versionedWrite` reads, checks and records it. */
export function stagedChangeEntity(id: string): VersionedEntity<StagedChangeRecord> {
  return {
    find: (tx) => findStagedChange(tx, id),
    entityType: "staged-change",
    entityId: id,
    label: stagedChangeLabel(id),
    view: auditView,
  };
}

/** Refuses a verb in a state it does not apply to, saying what the state is. */
export function assertState(
  change: StagedChangeRecord,
  allowed: readonly StagedChangeState[],
  verb: string,
): void {
  if (allowed.includes(change.state)) return;
  throw new AppError(
    "CONFLICT",
    `${stagedChangeLabel(change.id)} is ${change.state}; only a ${allowed.join(" or ")} staged change can be ${verb}.`,
  );
}

/** Steps as the API takes them (percent) to what is stored (basis points). */
export function storedSteps(steps: readonly TStagedStep[]) {
  return steps.map((step) => ({
    sliceBasisPoints: Math.round(step.percent * 100),
    dwellMs: step.dwellMs,
  }));
}

/** What every end (complete, abort, revert) writes on the row. */
export function endedData(
  state: "completed" | "aborted" | "reverted",
  reason: string,
  figures: unknown,
  nowMs: number,
): Prisma.StagedChangeUpdateInput {
  return {
    state,
    endReason: reason,
    endFigures: jsonColumn(figures),
    endedAt: new Date(nowMs),
    pausedAt: null,
    version: { increment: 1 },
  };
}

/**
 * Takes the change off the enforcers: an edit's candidate is deleted; a promoted candidate's goes
 * back to a plain dry-run candidate (its slice removed).
 */
export async function withdrawSlice(tx: Prisma.TransactionClient, change: StagedChangeRecord) {
  if (change.origin === "edit") {
    await tx.dryRunCandidate.delete({ where: { id: change.id }, select: { id: true } });
  } else {
    await tx.dryRunCandidate.update({
      where: { id: change.id },
      data: { sliceBasisPoints: null, version: { increment: 1 } },
      select: { id: true },
    });
  }
}
