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

/** One sample of a family: an optional name suffix (`_bucket`), its own labels, its value. */
export interface PrometheusSample {
  /** Appended to the family's name (`_bucket`, `_sum`, `_count`). @default "" */
  readonly suffix?: string;
  /** Labels after the constant ones, in this order. @default [] */
  readonly labels?: readonly (readonly [name: string, value: string])[];
  readonly value: number;
}

/** A metric family: `# HELP`, `# TYPE`, then its samples. */
export interface PrometheusFamily {
  /** The name after the prefix and its `_` (`decisions_total`). */
  readonly name: string;
  readonly type: "counter" | "gauge" | "histogram";
  readonly help: string;
  readonly samples: readonly PrometheusSample[];
}

/**
 * The Prometheus text exposition format (version 0.0.4) of `families`, in the order given, every
 * name prefixed and every sample labelled with the constant labels first. Ends with a newline.
 * The one writer of the format: the totals ({@link renderPrometheus}) and the runtime's own
 * families (`Enforcer.prometheus`) both go through it.
 */
export function renderPrometheusFamilies(
  families: readonly PrometheusFamily[],
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
  for (const family of families) {
    const name = `${prefix}_${family.name}`;
    lines.push(`# HELP ${name} ${escapeHelp(family.help)}`, `# TYPE ${name} ${family.type}`);
    for (const sample of family.samples) {
      const labels = formatLabels([...constant, ...(sample.labels ?? [])]);
      lines.push(`${name}${sample.suffix ?? ""}${labels} ${formatValue(sample.value)}`);
    }
  }
  return `${lines.join("\n")}\n`;
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
  return renderPrometheusFamilies(familiesOf(figures), options);
}

/** The families of the metrics totals. */
function familiesOf(figures: MetricsFigures): PrometheusFamily[] {
  const { latency } = figures;
  const buckets: PrometheusSample[] = [];
  let cumulative = 0;
  latency.boundsMicros.forEach((boundMicros, index) => {
    cumulative += latency.counts[index] ?? 0;
    buckets.push({
      suffix: "_bucket",
      labels: [["le", formatValue(boundMicros / 1e6)]],
      value: cumulative,
    });
  });
  return [
    {
      name: "decisions_total",
      type: "counter",
      help: "Requests per scope: admitted (allowed; for a dry-run scope, would have admitted), rejected by the scope, or would have been rejected by a dry-run scope (would_reject).",
      samples: figures.scopes.flatMap((counts) =>
        (
          [
            ["allowed", counts.allowed],
            ["rejected", counts.rejected],
            ["would_reject", counts.wouldReject],
          ] as const
        ).map(([outcome, value]) => ({
          labels: [
            ["scope", counts.scope],
            ["outcome", outcome],
          ] as const,
          value,
        })),
      ),
    },
    {
      name: "degraded_decisions_total",
      type: "counter",
      help: "Limits decided by their failure policy (open, closed, local) because the store failed, per scope.",
      samples: figures.scopes.map((counts) => ({
        labels: [["scope", counts.scope]] as const,
        value: counts.degraded,
      })),
    },
    {
      name: "store_failures_total",
      type: "counter",
      help: "Degraded decisions by the store failure behind them.",
      samples: STORE_FAILURES.map((failure) => ({
        labels: [["failure", failure]] as const,
        value: figures.degradedByFailure[failure],
      })),
    },
    {
      name: "decision_sources_total",
      type: "counter",
      help: "Decisions by who answered.",
      samples: DECISION_SOURCES.map((source) => ({
        labels: [["source", source]] as const,
        value: figures.decisionsBySource[source],
      })),
    },
    {
      name: "decision_latency_seconds",
      type: "histogram",
      help: "Time to decide one request.",
      samples: [
        ...buckets,
        { suffix: "_bucket", labels: [["le", "+Inf"]], value: latency.count },
        { suffix: "_sum", value: latency.sumMicros / 1e6 },
        { suffix: "_count", value: latency.count },
      ],
    },
  ];
}

/** A sample value: shortest round-trip decimal, `+Inf`/`-Inf`/`NaN` as the format spells them. */
function formatValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Number.POSITIVE_INFINITY) return "+Inf";
  if (value === Number.NEGATIVE_INFINITY) return "-Inf";
  return String(value);
}
