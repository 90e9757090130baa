"use client";

import { useCallback, useEffect, useRef, useState } from "react";
import { callApi, readApiError } from "@/lib/api/api-client";
import type { BacktestResult } from "@/lib/control";
import { Skeleton, SkeletonChart } from "../ui/skeleton";
import styles from "./backtest.module.css";
import { BacktestSummary } from "./backtest-summary";
import {
  type BacktestDraft,
  type BacktestFocus,
  backtestFocusOf,
  describeBacktestWindow,
} from "./backtest-words";

/** The API's route (lib/api/endpoints/backtest.ts): the same service, `policy.read`. */
const BACKTEST_URL = "/api/v1/backtest";

type Outcome =
  | {
      readonly status: "done";
      readonly key: string;
      readonly result: BacktestResult;
      /** Whose traffic the headline speaks of, as the draft that was run said. */
      readonly focus: BacktestFocus;
    }
  | {
      readonly status: "error";
      readonly key: string;
      readonly message: string;
      readonly fieldErrors: readonly { readonly path: string; readonly message: string }[];
    };

export interface BacktestPanelProps {
  /** What to replay; null while the fields do not make a valid draft (`unavailable` says why). */
  draft: BacktestDraft | null;
  /** @default "Fix the fields above to run a backtest." */
  unavailable?: string;
  /** How far back. @default 24 h */
  windowMs?: number;
  /**
   * "mount": run as soon as shown and whenever the draft changes while shown (for a preview the
   * operator asked for); "button": run on "Run backtest" only, and say when the fields changed
   * since (for a form being typed in: never a replay per keystroke). @default "button"
   */
  runOn?: "mount" | "button";
  /** @default "Backtest" */
  title?: string;
  /** The title's heading level, one below the section it sits in. @default 4 */
  headingLevel?: 2 | 3 | 4;
}

const DAY_MS = 24 * 3_600_000;

async function requestBacktest(
  draft: BacktestDraft,
  windowMs: number,
  key: string,
  signal: AbortSignal,
): Promise<Outcome> {
  let answer: Awaited<ReturnType<typeof callApi<BacktestResult | null>>>;
  try {
    answer = await callApi<BacktestResult | null>(BACKTEST_URL, {
      method: "POST",
      body: { draft, windowMs },
      signal,
    });
  } catch (error: unknown) {
    if (signal.aborted) throw error;
    return {
      status: "error",
      key,
      message: "The backtest could not be requested. Check your connection and try again.",
      fieldErrors: [],
    };
  }
  if (answer.ok && answer.body !== null) {
    return { status: "done", key, result: answer.body, focus: backtestFocusOf(draft) };
  }
  // A success without a body is no answer either.
  const { status, message, fieldErrors } = answer.ok
    ? readApiError(null, answer.status)
    : answer.error;
  return {
    status: "error",
    key,
    message: status === 403 ? `You may not run a backtest: ${message}` : message,
    fieldErrors,
  };
}

/**
 * What a draft would have done to the recorded traffic (`POST /api/v1/backtest`), with its
 * loading, empty, error and stale states. The numbers are the API's, from `runBacktest`.
 */
export function BacktestPanel({
  draft,
  unavailable = "Fix the fields above to run a backtest.",
  windowMs = DAY_MS,
  runOn = "button",
  title = "Backtest",
  headingLevel = 4,
}: BacktestPanelProps) {
  const Heading = `h${headingLevel}` as const;
  const key = draft === null ? null : JSON.stringify({ draft, windowMs });
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const [runningKey, setRunningKey] = useState<string | null>(null);
  const controller = useRef<AbortController | null>(null);

  const run = useCallback(() => {
    if (draft === null || key === null) return;
    controller.current?.abort();
    const current = new AbortController();
    controller.current = current;
    setRunningKey(key);
    requestBacktest(draft, windowMs, key, current.signal)
      .then((answer) => {
        if (current.signal.aborted) return;
        setOutcome(answer);
        setRunningKey(null);
      })
      .catch(() => {
        // Aborted: a newer run (or the panel going away) replaced it.
      });
  }, [draft, key, windowMs]);

  // "mount": the draft's key, not its identity, decides when to replay.
  const runRef = useRef(run);
  runRef.current = run;
  useEffect(() => {
    if (runOn === "mount" && key !== null) runRef.current();
  }, [runOn, key]);
  useEffect(() => () => controller.current?.abort(), []);

  const isRunning = runningKey !== null && runningKey === key;
  const isStale = outcome !== null && outcome.key !== key;
  const window = describeBacktestWindow(windowMs);

  return (
    <section
      className={styles.panel}
      aria-label={title}
      aria-busy={isRunning}
      data-testid="backtest"
      data-state={
        isRunning ? "loading" : outcome === null ? "idle" : isStale ? "stale" : outcome.status
      }
    >
      <div className={styles.panelHead}>
        <Heading className={styles.title}>{title}</Heading>
        <span className="muted small">
          What this would have done to the traffic recorded in {window}, replayed through the
          limiter.
        </span>
      </div>
      {runOn === "button" || isStale || outcome?.status === "error" ? (
        <div className={styles.actions}>
          <button
            type="button"
            className="button button-secondary"
            onClick={run}
            disabled={draft === null || isRunning}
            aria-busy={isRunning}
          >
            {isRunning ? "Replaying…" : outcome === null ? "Run backtest" : "Run backtest again"}
          </button>
          {draft === null ? <span className="muted small">{unavailable}</span> : null}
          {isStale && !isRunning ? (
            <span className="small" role="status" data-testid="backtest-stale">
              The draft changed since this backtest: run it again to see the new one.
            </span>
          ) : null}
        </div>
      ) : null}
      {isRunning ? (
        <div data-testid="backtest-loading">
          <Skeleton lines={2} label="Replaying the recorded traffic" />
          <SkeletonChart height={140} label="Drawing the backtest" />
        </div>
      ) : outcome === null ? null : outcome.status === "error" ? (
        <div className="error-state" role="alert" data-testid="backtest-error">
          <p className="error-state-title">The backtest was refused</p>
          <p className="error-state-message">{outcome.message}</p>
          {outcome.fieldErrors.length > 0 ? (
            <ul className="small">
              {outcome.fieldErrors.map((field) => (
                <li key={`${field.path}:${field.message}`}>
                  <code>{field.path}</code>: {field.message}
                </li>
              ))}
            </ul>
          ) : null}
        </div>
      ) : (
        <div className={isStale ? styles.stale : undefined}>
          <BacktestSummary result={outcome.result} focus={outcome.focus} windowMs={windowMs} />
        </div>
      )}
    </section>
  );
}
