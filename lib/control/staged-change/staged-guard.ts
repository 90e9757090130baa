/**
 * The staged change's guard and step clock, pure: what the worker decides from the counts it
 * read and the time, with no I/O. `supervise-staged-changes.ts` reads and writes around it.
 *
 * The guard compares rejection rates, never counts: the slice's (requests its new limit rejected,
 * over its requests) against the rest's (requests the old limit rejected, over theirs). A window
 * is judged only when the slice saw at least `minRequests` in it; a judged window over the margin
 * extends the streak, a judged window within it ends the streak, an unjudged one leaves it. The
 * change reverts when the streak reaches `consecutiveWindows`.
 */
import { z } from "zod";

/** The guard's fields without defaults: each checked as the API and the settings take it. */
const GUARD_FIELDS = {
  marginPercent: z
    .number({ error: "marginPercent must be a number from 0 to 100" })
    .min(0, { error: "marginPercent must be at least 0" })
    .max(100, { error: "marginPercent must be at most 100" }),
  minRequests: z
    .number({ error: "minRequests must be a whole number" })
    .int({ error: "minRequests must be a whole number" })
    .min(1, { error: "minRequests must be at least 1" })
    .max(1_000_000_000, { error: "minRequests must be at most 1,000,000,000" }),
  windowMs: z
    .number({ error: "windowMs must be a whole number of milliseconds" })
    .int({ error: "windowMs must be a whole number of milliseconds" })
    .min(1000, { error: "windowMs must be at least 1000 (1 s)" })
    .max(3_600_000, { error: "windowMs must be at most 3600000 (1 h)" }),
  consecutiveWindows: z
    .number({ error: "consecutiveWindows must be a whole number" })
    .int({ error: "consecutiveWindows must be a whole number" })
    .min(1, { error: "consecutiveWindows must be at least 1" })
    .max(60, { error: "consecutiveWindows must be at most 60" }),
};

/**
 * The product's guard defaults, used until the settings are first saved; they match the column
 * defaults of StagedGuardSettings in prisma/schema.prisma. How they were chosen:
 * docs/staged-changes.md.
 */
export const DEFAULT_STAGED_GUARD = {
  marginPercent: 5,
  minRequests: 100,
  windowMs: 60_000,
  consecutiveWindows: 3,
} as const;

/**
 * When the guard reverts: the slice's rejection rate exceeds the rest's by more than
 * `marginPercent` points, with at least `minRequests` requests in the slice, for
 * `consecutiveWindows` windows of `windowMs` in a row.
 */
export const ZStagedGuard = z.strictObject({
  /** @default 5 (percentage points) */
  marginPercent: GUARD_FIELDS.marginPercent.default(DEFAULT_STAGED_GUARD.marginPercent),
  /** @default 100 */
  minRequests: GUARD_FIELDS.minRequests.default(DEFAULT_STAGED_GUARD.minRequests),
  /** @default 60_000 (one minute); at least 1 s */
  windowMs: GUARD_FIELDS.windowMs.default(DEFAULT_STAGED_GUARD.windowMs),
  /** @default 3 */
  consecutiveWindows: GUARD_FIELDS.consecutiveWindows.default(
    DEFAULT_STAGED_GUARD.consecutiveWindows,
  ),
});
/** Some of the guard's fields: a staged change's own, the rest from the settings' defaults. */
export const ZStagedGuardOverrides = z.strictObject(GUARD_FIELDS).partial();
export type TStagedGuard = z.output<typeof ZStagedGuard>;

/** Requests and rejections on each side, as counted since some instant. */
export const ZSideCounts = z.strictObject({
  sliceRequests: z.number().int().min(0),
  sliceRejected: z.number().int().min(0),
  restRequests: z.number().int().min(0),
  restRejected: z.number().int().min(0),
});
export type SideCounts = z.output<typeof ZSideCounts>;

export const ZGuardWindow = ZSideCounts.extend({ windowEndMs: z.number().int() });
export type GuardWindow = z.output<typeof ZGuardWindow>;

/** What the worker keeps between runs (the row's `guardState`). */
export const ZGuardState = z.strictObject({
  /** When the counts below were read: the current window started then. */
  atMs: z.number().int(),
  /** Totals since the staged change started, at `atMs`. */
  totals: ZSideCounts,
  /** The slice's requests since this step started (for holding a quiet step). */
  stepSliceRequests: z.number().int().min(0),
  /** The judged windows of the current streak over the margin, oldest first. */
  streak: z.array(ZGuardWindow),
});
export type GuardState = z.output<typeof ZGuardState>;

export function rejectionRate(rejected: number, requests: number): number {
  return requests === 0 ? 0 : rejected / requests;
}

export type WindowVerdict = "too-few-requests" | "within-margin" | "over-margin";

export function judgeWindow(guard: TStagedGuard, window: SideCounts): WindowVerdict {
  if (window.sliceRequests < guard.minRequests) return "too-few-requests";
  const gap =
    rejectionRate(window.sliceRejected, window.sliceRequests) -
    rejectionRate(window.restRejected, window.restRequests);
  return gap * 100 > guard.marginPercent ? "over-margin" : "within-margin";
}

function difference(now: SideCounts, then: SideCounts): SideCounts {
  // Counts only grow; a smaller reading (a minute rolled out of Redis before it reached
  // Postgres) counts as nothing rather than as negative traffic.
  return {
    sliceRequests: Math.max(0, now.sliceRequests - then.sliceRequests),
    sliceRejected: Math.max(0, now.sliceRejected - then.sliceRejected),
    restRequests: Math.max(0, now.restRequests - then.restRequests),
    restRejected: Math.max(0, now.restRejected - then.restRejected),
  };
}

export interface GuardStep {
  readonly state: GuardState;
  /** The window judged at this run, or null when the window has not ended yet. */
  readonly window: (GuardWindow & { readonly verdict: WindowVerdict }) | null;
  /** Set when the streak reached `consecutiveWindows`: the windows that tripped the guard. */
  readonly trippedBy: readonly GuardWindow[] | null;
}

/**
 * One run of the guard at `nowMs` with the totals read then. The first run (no state) only takes
 * its baseline. A window ends when `windowMs` has passed since the last one ended.
 */
export function stepGuard(
  guard: TStagedGuard,
  previous: GuardState | null,
  totals: SideCounts,
  nowMs: number,
): GuardStep {
  if (previous === null) {
    return {
      state: { atMs: nowMs, totals, stepSliceRequests: 0, streak: [] },
      window: null,
      trippedBy: null,
    };
  }
  if (nowMs - previous.atMs < guard.windowMs) {
    return { state: previous, window: null, trippedBy: null };
  }
  const counts = difference(totals, previous.totals);
  const window = { ...counts, windowEndMs: nowMs };
  const verdict = judgeWindow(guard, counts);
  const streak =
    verdict === "over-margin"
      ? [...previous.streak, window].slice(-guard.consecutiveWindows)
      : verdict === "within-margin"
        ? []
        : previous.streak;
  const state: GuardState = {
    atMs: nowMs,
    totals,
    stepSliceRequests: previous.stepSliceRequests + counts.sliceRequests,
    streak,
  };
  return {
    state,
    window: { ...window, verdict },
    trippedBy: streak.length >= guard.consecutiveWindows ? streak : null,
  };
}

/** What the step clock says to do with a running staged change. */
export type StepAction =
  | { readonly kind: "wait" }
  | { readonly kind: "advance" }
  | { readonly kind: "complete" }
  /** The dwell has passed but the slice has seen fewer than `minRequests` in this step. */
  | { readonly kind: "hold"; readonly shouldNotify: boolean };

/** How many dwell times a step may wait for traffic before the operator is told. */
export const HOLD_NOTICE_DWELLS = 3;

export function nextStepAction(
  change: {
    readonly stepIndex: number;
    readonly steps: readonly { readonly dwellMs: number }[];
    readonly stepStartedAtMs: number;
    readonly isHoldNotified: boolean;
  },
  guard: TStagedGuard,
  stepSliceRequests: number,
  nowMs: number,
): StepAction {
  const dwellMs = change.steps[change.stepIndex]?.dwellMs ?? 0;
  const heldMs = nowMs - change.stepStartedAtMs;
  if (heldMs < dwellMs) return { kind: "wait" };
  if (stepSliceRequests < guard.minRequests) {
    return {
      kind: "hold",
      shouldNotify: !change.isHoldNotified && heldMs >= HOLD_NOTICE_DWELLS * dwellMs,
    };
  }
  return change.stepIndex >= change.steps.length - 1 ? { kind: "complete" } : { kind: "advance" };
}

/** The revert's reason, in words, with the figures: what the audit entry and the webhook say. */
export function describeTrip(guard: TStagedGuard, windows: readonly GuardWindow[]): string {
  const parts = windows.map((window) => {
    const slice = rejectionRate(window.sliceRejected, window.sliceRequests);
    const rest = rejectionRate(window.restRejected, window.restRequests);
    return `slice ${window.sliceRejected}/${window.sliceRequests} (${percent(slice)}) vs rest ${window.restRejected}/${window.restRequests} (${percent(rest)})`;
  });
  return (
    `reverted by its guard: the slice's rejection rate exceeded the rest's by more than ` +
    `${guard.marginPercent} points for ${windows.length} windows of ${guard.windowMs / 1000} s in a row: ` +
    parts.join("; ")
  );
}

function percent(rate: number): string {
  return `${(rate * 100).toFixed(1)} %`;
}
