/**
 * The worker's supervision of live staged changes, one run: for each, the counts of both sides
 * read (the same per-minute counts as every chart: rolled-up rows and the live minutes in Redis),
 * the guard stepped (`staged-guard.ts`), and at most one action taken, each through its audited
 * service with the system as actor: revert (the guard tripped), advance, complete, or tell the
 * operator that a quiet step is holding. The guard's running state is saved on the row without
 * an audit entry (bookkeeping, not a change), only if nobody changed the row meanwhile.
 */
import type { MetricsReadingRedis } from "@limitplane/enforcer/publication";
import type { ChangeContext } from "../change-context";
import type { ControlDeps } from "../deps";
import { readScopeCounts } from "../dry-run/read-scope-counts";
import { toJson } from "../stored";
import { advanceStagedChange } from "./advance-staged-change";
import { completeStagedChange } from "./complete-staged-change";
import { listStagedChanges } from "./list-staged-changes";
import { revertStagedChange } from "./revert-staged-change";
import { runStagedChangeVerb } from "./run-staged-change-verb";
import { LIVE_STATES, type StagedChangeRecord } from "./staged-change-record";
import { describeTrip, nextStepAction, type SideCounts, stepGuard } from "./staged-guard";

export interface SuperviseDeps extends ControlDeps {
  /** Where the enforcers' live counts are (a `control` client and REDIS_KEY_PREFIX). */
  readonly live: { readonly redis: MetricsReadingRedis | null; readonly prefix: string };
}

export type SupervisionAction =
  | "baseline"
  | "wait"
  | "reverted"
  | "advanced"
  | "completed"
  | "held"
  | "hold-notified";

export interface SupervisionOutcome {
  readonly id: string;
  readonly action: SupervisionAction;
}

const MINUTE_MS = 60_000;

function systemContext(reason: string): ChangeContext {
  return { actor: { type: "system", id: null, name: "Staged change guard" }, reason };
}

/** The scopes whose counts make each side (see `resolve.ts`). */
export function sideScopes(change: { readonly id: string; readonly target: string }) {
  return { slice: `candidate:${change.id}/slice`, rest: change.target };
}

/** Both sides' totals since the staged change started. */
export async function readSideTotals(
  change: StagedChangeRecord,
  nowMs: number,
  deps: SuperviseDeps,
): Promise<SideCounts> {
  const scopes = sideScopes(change);
  const fromMs = Math.floor(Date.parse(change.createdAt) / MINUTE_MS) * MINUTE_MS;
  const { rows } = await readScopeCounts(
    { scopes: [scopes.slice, scopes.rest], fromMs, toMs: nowMs + MINUTE_MS, nowMs },
    { db: deps.db, redis: deps.live.redis, prefix: deps.live.prefix },
  );
  const totals = { sliceRequests: 0, sliceRejected: 0, restRequests: 0, restRejected: 0 };
  for (const row of rows) {
    if (row.scope === scopes.slice) {
      totals.sliceRequests += row.allowed + row.rejected;
      totals.sliceRejected += row.rejected;
    } else if (row.scope === scopes.rest) {
      totals.restRequests += row.allowed + row.rejected;
      totals.restRejected += row.rejected;
    }
  }
  return totals;
}

export async function superviseStagedChanges(deps: SuperviseDeps): Promise<SupervisionOutcome[]> {
  const outcomes: SupervisionOutcome[] = [];
  for (const change of await listStagedChanges(deps, { states: LIVE_STATES })) {
    outcomes.push({ id: change.id, action: await superviseOne(change, deps) });
  }
  return outcomes;
}

async function superviseOne(
  change: StagedChangeRecord,
  deps: SuperviseDeps,
): Promise<SupervisionAction> {
  const nowMs = deps.clock.nowMs();
  const totals = await readSideTotals(change, nowMs, deps);
  const step = stepGuard(change.guard, change.guardState, totals, nowMs);
  const target = { id: change.id, expectedVersion: change.version };
  if (step.trippedBy !== null) {
    const why = describeTrip(change.guard, step.trippedBy);
    await revertStagedChange(
      { ...target, why, windows: [...step.trippedBy] },
      systemContext(why),
      deps,
    );
    return "reverted";
  }
  if (change.guardState === null) {
    await saveGuardState(change, step.state, deps);
    return "baseline";
  }
  const action =
    change.state === "paused"
      ? ({ kind: "wait" } as const)
      : nextStepAction(
          {
            stepIndex: change.stepIndex,
            steps: change.steps,
            stepStartedAtMs: Date.parse(change.stepStartedAt),
            isHoldNotified: change.holdNotifiedAt !== null,
          },
          change.guard,
          step.state.stepSliceRequests,
          nowMs,
        );
  switch (action.kind) {
    case "advance":
      await advanceStagedChange(target, systemContext("the step's dwell time passed"), deps);
      return "advanced";
    case "complete":
      await completeStagedChange(target, systemContext("the last step's dwell time passed"), deps);
      return "completed";
    case "hold":
      await saveGuardState(change, step.state, deps);
      if (!action.shouldNotify) return "held";
      await runStagedChangeVerb(
        deps,
        systemContext(
          `step ${change.stepIndex + 1} has waited three times its dwell time for ${change.guard.minRequests} requests in the slice; it has seen ${step.state.stepSliceRequests}`,
        ),
        { id: change.id, expectedVersion: change.version },
        {
          action: "staged-change.hold",
          affectsSnapshot: false,
          async apply(_tx, _current, atMs) {
            return {
              data: {
                holdNotifiedAt: new Date(atMs),
                guardState: toJson(step.state),
                version: { increment: 1 },
              },
            };
          },
        },
      );
      return "hold-notified";
    case "wait":
      await saveGuardState(change, step.state, deps);
      return "wait";
  }
}

async function saveGuardState(
  change: StagedChangeRecord,
  state: StagedChangeRecord["guardState"],
  deps: SuperviseDeps,
): Promise<void> {
  await deps.db.stagedChange.updateMany({
    where: { id: change.id, version: change.version },
    data: {
      guardState: state === null ? undefined : toJson(state),
      breachedWindows: state?.streak.length ?? 0,
      lastWindowEndMs: state === null ? undefined : BigInt(state.atMs),
    },
  });
}
