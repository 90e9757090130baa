/**
 * A decision in one log line: who answered, what happened, and each limit's part in it. Pure; the
 * caller adds the subject and request details it is allowed to log.
 */
import type { EnforcerDecision } from "./types";

/** Flat fields for a structured (JSON) log. */
export interface DecisionSummary {
  readonly verdict: "allow" | "reject";
  /** The binding limit, or null when none bound. */
  readonly scope: string | null;
  readonly reason: string | null;
  readonly retryAfterMs: number;
  readonly source: EnforcerDecision["source"];
  readonly degraded: boolean;
  readonly failure: EnforcerDecision["failure"];
  /** Each limit, in check order: `scope ok 19/20`, `scope REJECT 0/5 100ms`, `scope dry-run would-reject`. */
  readonly limits: readonly string[];
}

/** The summary of `decision`, for a structured log. */
export function decisionSummary(decision: EnforcerDecision): DecisionSummary {
  return {
    verdict: decision.allowed ? "allow" : "reject",
    scope: decision.scope,
    reason: decision.reason,
    retryAfterMs: decision.retryAfterMs,
    source: decision.source,
    degraded: decision.degraded,
    failure: decision.failure,
    limits: decision.outcomes.map((outcome) => {
      const fallback = outcome.fallback === null ? "" : ` (${outcome.fallback})`;
      if (outcome.mode === "dry-run") {
        return `${outcome.scope} dry-run ${outcome.allowed ? "would-allow" : "would-reject"}${fallback}`;
      }
      const usage = `${outcome.remaining}/${Math.floor(outcome.limit)}`;
      return outcome.allowed
        ? `${outcome.scope} ok ${usage}${fallback}`
        : `${outcome.scope} REJECT ${usage} ${outcome.retryAfterMs}ms${fallback}`;
    }),
  };
}

/**
 * The summary as one line of text:
 * `reject tier:pro/endpoint:reports limit-exceeded retry=100ms via store | tier:pro ok 3/20; ...`.
 */
export function formatDecisionSummary(summary: DecisionSummary): string {
  const head = [summary.verdict, summary.scope ?? "(unbound)"];
  if (summary.reason !== null) head.push(summary.reason);
  if (summary.verdict === "reject") head.push(`retry=${summary.retryAfterMs}ms`);
  head.push(`via ${summary.source}`);
  if (summary.failure !== null) head.push(`after ${summary.failure}`);
  return summary.limits.length === 0
    ? head.join(" ")
    : `${head.join(" ")} | ${summary.limits.join("; ")}`;
}
