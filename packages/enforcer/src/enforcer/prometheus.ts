/**
 * The text exposition format of the enforcer's metrics totals, for a Prometheus endpoint.
 */
import type { MetricsFigures } from "./decision-metrics";
import { DECISION_SOURCES, STORE_FAILURES } from "./types";

export interface RenderPrometheusOptions {
  /** Metric name prefix. @default "limitplane" */
  readonly prefix?: string;
  /** Labels added to every series, e.g. `{ gateway: "gw-1" }`. @default {} */
  readonly constantLabels?: Readonly<Record<string, string>>;
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** A label value in the text exposition format: `\`, `"` and newline escaped. */
export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** HELP text: `\` and newline escaped. */
function escapeHelp(text: string): string {
  return text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

function formatLabels(labels: readonly (readonly [string, string])[]): string {
  if (labels.length === 0) return "";
  return `{${labels.map(([name, value]) => `${name}="${escapeLabelValue(value)}"`).join(",")}}`;
}

/**
 * The Prometheus text exposition format (version 0.0.4) of `figures` (usually
 * `metrics.totals()`): counters per scope and outcome, degraded decisions per scope and per store
 * failure, decisions per source, and the latency histogram in seconds with cumulative `_bucket`
 * series, `_sum` and `_count`. Series are in a stable order. Ends with a newline.
 */
export function renderPrometheus(
  figures: MetricsFigures,
  options: RenderPrometheusOptions = {},
): string {
  const prefix = options.prefix ?? "limitplane";
  if (!METRIC_NAME.test(prefix)) throw new RangeError(`invalid metric name prefix: ${prefix}`);
  const constant = Object.entries(options.constantLabels ?? {});
  for (const [name] of constant) {
    if (!LABEL_NAME.test(name) || name.startsWith("__")) {
      throw new RangeError(`invalid label name: ${name}`);
    }
  }
  const lines: string[] = [];
  const family = (name: string, type: "counter" | "histogram", help: string) => {
    lines.push(`# HELP ${prefix}_${name} ${escapeHelp(help)}`, `# TYPE ${prefix}_${name} ${type}`);
  };
  const sample = (name: string, labels: readonly (readonly [string, string])[], value: number) => {
    lines.push(`${prefix}_${name}${formatLabels([...constant, ...labels])} ${formatValue(value)}`);
  };

  family(
    "decisions_total",
    "counter",
    "Requests per scope: admitted (allowed; for a dry-run scope, would have admitted), rejected by the scope, or would have been rejected by a dry-run scope (would_reject).",
  );
  for (const counts of figures.scopes) {
    sample(
      "decisions_total",
      [
        ["scope", counts.scope],
        ["outcome", "allowed"],
      ],
      counts.allowed,
    );
    sample(
      "decisions_total",
      [
        ["scope", counts.scope],
        ["outcome", "rejected"],
      ],
      counts.rejected,
    );
    sample(
      "decisions_total",
      [
        ["scope", counts.scope],
        ["outcome", "would_reject"],
      ],
      counts.wouldReject,
    );
  }

  family(
    "degraded_decisions_total",
    "counter",
    "Limits decided by their failure policy (open, closed, local) because the store failed, per scope.",
  );
  for (const counts of figures.scopes) {
    sample("degraded_decisions_total", [["scope", counts.scope]], counts.degraded);
  }

  family("store_failures_total", "counter", "Degraded decisions by the store failure behind them.");
  for (const failure of STORE_FAILURES) {
    sample("store_failures_total", [["failure", failure]], figures.degradedByFailure[failure]);
  }

  family("decision_sources_total", "counter", "Decisions by who answered.");
  for (const source of DECISION_SOURCES) {
    sample("decision_sources_total", [["source", source]], figures.decisionsBySource[source]);
  }

  const { latency } = figures;
  family("decision_latency_seconds", "histogram", "Time to decide one request.");
  let cumulative = 0;
  latency.boundsMicros.forEach((boundMicros, index) => {
    cumulative += latency.counts[index] ?? 0;
    sample("decision_latency_seconds_bucket", [["le", formatValue(boundMicros / 1e6)]], cumulative);
  });
  sample("decision_latency_seconds_bucket", [["le", "+Inf"]], latency.count);
  sample("decision_latency_seconds_sum", [], latency.sumMicros / 1e6);
  sample("decision_latency_seconds_count", [], latency.count);

  return `${lines.join("\n")}\n`;
}

/** A sample value: shortest round-trip decimal, `+Inf`/`-Inf`/`NaN` as the format spells them. */
function formatValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Number.POSITIVE_INFINITY) return "+Inf";
  if (value === Number.NEGATIVE_INFINITY) return "-Inf";
  return String(value);
}
