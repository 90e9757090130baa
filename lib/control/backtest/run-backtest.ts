/**
 * What a draft would have done to real traffic: the recorded window (`loadTrafficWindow`)
 * replayed through the pure limiter core under the policy in force and under the draft
 * (`replayTraffic`), from empty buckets at the start of a warm-up before the window (default
 * 15 minutes; its requests are replayed, not counted). Counts are scaled by 1 / sample rate.
 * Writes nothing.
 */
import { z } from "zod";
import type { ClockedReadDeps } from "../deps";
import { AppError, validationError } from "../errors";
import { readCompiledSnapshot } from "../policy/get-current-snapshot";
import { previewPolicyChange } from "../policy/preview-policy-change";
import { applyBacktestDraft, ZBacktestDraft } from "./backtest-draft";
import { loadTrafficWindow, type TrafficRecordGapView } from "./load-traffic-window";
import { type ReplayResult, replayTraffic } from "./replay-traffic";

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
/** The longest window: the record's default retention. */
export const MAX_BACKTEST_WINDOW_MS = 48 * HOUR_MS;

export const ZRunBacktestOptions = z.strictObject({
  draft: ZBacktestDraft,
  /** How far back from now. @default 24 h */
  windowMs: z
    .number({ error: "windowMs must be a number of milliseconds" })
    .int({ error: "windowMs must be a whole number of milliseconds" })
    .min(MINUTE_MS, { error: "windowMs must be at least 60000 (one minute)" })
    .max(MAX_BACKTEST_WINDOW_MS, {
      error: `windowMs must be at most ${MAX_BACKTEST_WINDOW_MS} (48 h)`,
    })
    .default(24 * HOUR_MS),
  /** Replayed before the window, not counted, so buckets are not all full at its start. @default 15 min */
  warmUpMs: z
    .number({ error: "warmUpMs must be a number of milliseconds" })
    .int({ error: "warmUpMs must be a whole number of milliseconds" })
    .min(0, { error: "warmUpMs must be at least 0" })
    .max(HOUR_MS, { error: "warmUpMs must be at most 3600000 (one hour)" })
    .default(15 * MINUTE_MS),
  /** @default 20 */
  topCustomers: z
    .number({ error: "topCustomers must be a number" })
    .int({ error: "topCustomers must be a whole number" })
    .min(1, { error: "topCustomers must be at least 1" })
    .max(100, { error: "topCustomers must be at most 100" })
    .default(20),
  /** Replay every subject, not only those the draft changes (fidelity of all). @default false */
  replayAll: z.boolean({ error: "replayAll must be true or false" }).default(false),
});
export type RunBacktestOptions = z.input<typeof ZRunBacktestOptions>;

export interface BacktestResult extends Omit<ReplayResult, "fidelity"> {
  readonly span: {
    readonly fromMs: number;
    readonly toMs: number;
    readonly warmUpFromMs: number;
    /** In words: where the replay's buckets start. */
    readonly startsFrom: string;
  };
  readonly policyVersion: number;
  readonly trust: {
    readonly sampleRates: readonly number[];
    /** Requests in the record (unscaled) and the estimate they stand for. */
    readonly recordedRequests: number;
    readonly estimatedRequests: number;
    readonly gateways: number;
    readonly dropped: number;
    readonly gaps: readonly TrafficRecordGapView[];
    readonly firstRecordedMs: number | null;
    readonly lastRecordedMs: number | null;
    /** Decided without Redis: replayed, excluded from fidelity. */
    readonly withoutStore: number;
    readonly fidelity: {
      readonly compared: number;
      readonly matched: number;
      /** matched / compared; null when nothing could be compared. */
      readonly rate: number | null;
    };
    readonly notes: readonly string[];
  };
  readonly isEmpty: boolean;
}

export interface BacktestDeps extends ClockedReadDeps {}

function prefixDraft(error: unknown): never {
  if (error instanceof AppError && error.code === "VALIDATION_FAILED") {
    throw validationError(
      error.fieldErrors.map((field) => ({ ...field, path: `draft.${field.path}` })),
    );
  }
  throw error;
}

export async function runBacktest(
  options: RunBacktestOptions,
  deps: BacktestDeps,
): Promise<BacktestResult> {
  const parsed = ZRunBacktestOptions.safeParse(options);
  if (!parsed.success) {
    throw validationError(
      parsed.error.issues.map((issue) => ({
        path: issue.path.map(String).join(".") || "(body)",
        message: issue.message,
      })),
    );
  }
  const input = parsed.data;
  const nowMs = deps.clock.nowMs();
  const toMs = nowMs;
  const fromMs = toMs - input.windowMs;
  const warmUpFromMs = fromMs - input.warmUpMs;
  const draft = input.draft;
  if (draft.kind === "tier" || draft.kind === "endpoint-class" || draft.kind === "settings") {
    // The preview's validation: a draft it refuses is refused here, with the same messages.
    await previewPolicyChange(draft, { db: deps.db, clock: { nowMs: () => nowMs } }).catch(
      prefixDraft,
    );
  }
  const current = await readCompiledSnapshot("all", deps);
  const drafted = applyBacktestDraft(current, draft, { fromMs: warmUpFromMs, toMs });
  const loaded = await loadTrafficWindow(deps.db, { fromMs: warmUpFromMs, toMs });
  const replay = replayTraffic(loaded.window, {
    fromMs,
    toMs,
    current,
    draft: drafted,
    replayAll: input.replayAll,
    topCustomers: input.topCustomers,
  });
  const { fidelity, ...figures } = replay;
  const notes: string[] = [];
  if (loaded.sampleRates.some((rate) => rate < 1)) {
    notes.push(
      `Sampled by subject at ${loaded.sampleRates.map((r) => `${Math.round(r * 1000) / 10}%`).join(", ")}: counts are the sampled subjects' requests scaled up; each sampled subject is replayed exactly.`,
    );
  }
  if (loaded.gaps.length > 0) {
    notes.push(
      `${loaded.gaps.length} gap(s) in the record (${loaded.dropped} requests dropped by full buffers${loaded.gaps.some((g) => g.reason === "stream-trimmed") ? ", and stretches trimmed from a stream before the worker moved them" : ""}): buckets after a gap start fuller than they were.`,
    );
  }
  if (replay.withoutStore > 0) {
    notes.push(
      `${replay.withoutStore} requests were decided without Redis (failure policy); they are replayed but excluded from the fidelity check.`,
    );
  }
  if (fidelity.compared === 0 && replay.replayedRequests > 0) {
    notes.push(
      `No replayed request was recorded under policy version ${current.version}; fidelity cannot be checked.`,
    );
  }
  return {
    ...figures,
    span: {
      fromMs,
      toMs,
      warmUpFromMs,
      startsFrom:
        input.warmUpMs === 0
          ? "empty (full) buckets at the start of the window"
          : `empty (full) buckets ${Math.round(input.warmUpMs / MINUTE_MS)} min before the window (a warm-up replayed, not counted)`,
    },
    policyVersion: current.version,
    trust: {
      sampleRates: loaded.sampleRates,
      recordedRequests: replay.recordedRequests,
      estimatedRequests: replay.totals.requests,
      gateways: loaded.gateways,
      dropped: loaded.dropped,
      gaps: loaded.gaps,
      firstRecordedMs: loaded.firstRecordedMs,
      lastRecordedMs: loaded.lastRecordedMs,
      withoutStore: replay.withoutStore,
      fidelity: {
        ...fidelity,
        rate: fidelity.compared === 0 ? null : fidelity.matched / fidelity.compared,
      },
      notes,
    },
    isEmpty: replay.recordedRequests === 0,
  };
}
