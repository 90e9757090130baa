/**
 * A staged change's chart, pure: the slice's and the rest's rejection rates per minute over the
 * change's life, and where each step began. The page reads the minutes and the audit entries;
 * `components/charts/staged-change-chart.tsx` draws what this returns.
 */
import {
  buildChartMarkers,
  type ChartMarker,
  type ChartRow,
  type ChartWindow,
} from "./chart-series";

const MINUTE_MS = 60_000;
/** The chart spans at least this long, so a change a minute old is not one point on a line. */
const MIN_SPAN_MS = 10 * MINUTE_MS;

/** One minute of counts on both sides (read-staged-figures.ts `StagedMinute`). */
export interface StagedChartMinute {
  readonly minuteStartMs: number;
  readonly sliceRequests: number;
  readonly sliceRejected: number;
  readonly restRequests: number;
  readonly restRejected: number;
}

/** An audited event of the staged change (its audit entries), for the markers. */
export interface StagedChartEvent {
  readonly atMs: number;
  readonly auditEntryId: string;
  /** `staged-change.start`, `staged-change.advance`, ... */
  readonly action: string;
}

export interface StagedChartData extends ChartWindow {
  /** `values[0]` the slice's rejection rate, `values[1]` the rest's; null: no request that minute. */
  readonly rows: readonly (ChartRow & {
    readonly index: number;
    /** The minute's counts, or null when neither side saw a request. */
    readonly counts: StagedChartMinute | null;
  })[];
  /** Each step's start ("Step 2: 25 %") and every other verb (paused, reverted, ...). */
  readonly markers: readonly ChartMarker[];
}

export interface StagedChartInput {
  readonly minutes: readonly StagedChartMinute[];
  /** The change's audit entries, in any order. */
  readonly events: readonly StagedChartEvent[];
  /** Each step's slice in basis points, in order. */
  readonly stepSlicesBasisPoints: readonly number[];
  readonly createdAtMs: number;
  /** When it ended, or null while it is live. */
  readonly endedAtMs: number | null;
  readonly nowMs: number;
}

function rate(rejected: number, requests: number): number | null {
  return requests === 0 ? null : rejected / requests;
}

/**
 * The window is whole minutes from the change's start to its end (or now, the current minute
 * still counting), at least ten minutes wide; minutes without a request on a side are gaps.
 */
export function buildStagedChart(input: StagedChartInput): StagedChartData {
  const startMs = Math.floor(input.createdAtMs / MINUTE_MS) * MINUTE_MS;
  const lastMs = input.endedAtMs ?? input.nowMs;
  const endMs = Math.max(startMs + MIN_SPAN_MS, (Math.floor(lastMs / MINUTE_MS) + 1) * MINUTE_MS);
  const byMinute = new Map(input.minutes.map((minute) => [minute.minuteStartMs, minute]));
  const bucketStartsMs: number[] = [];
  for (let atMs = startMs; atMs < endMs; atMs += MINUTE_MS) bucketStartsMs.push(atMs);
  const currentMinuteMs = Math.floor(input.nowMs / MINUTE_MS) * MINUTE_MS;
  const partialBucketStartMs =
    input.endedAtMs === null && bucketStartsMs.includes(currentMinuteMs) ? currentMinuteMs : null;
  const rows = bucketStartsMs.map((bucketStartMs, index) => {
    const minute = byMinute.get(bucketStartMs);
    return {
      index,
      xMs: bucketStartMs + MINUTE_MS / 2,
      startMs: bucketStartMs,
      endMs: bucketStartMs + MINUTE_MS,
      counts: minute ?? null,
      values:
        minute === undefined
          ? [null, null]
          : [
              rate(minute.sliceRejected, minute.sliceRequests),
              rate(minute.restRejected, minute.restRequests),
            ],
    };
  });
  const events = [...input.events].sort(
    (a, b) => a.atMs - b.atMs || a.auditEntryId.localeCompare(b.auditEntryId),
  );
  let step = 0;
  const labelled = events.map((event) => {
    const verb = event.action.replace(/^staged-change\./, "");
    if (verb !== "start" && verb !== "advance") return { ...event, label: verbLabel(verb) };
    step += 1;
    const slice = input.stepSlicesBasisPoints[step - 1];
    return { ...event, label: `Step ${step}${slice === undefined ? "" : `: ${slice / 100} %`}` };
  });
  const markers = buildChartMarkers(labelled, { startMs, endMs });
  return {
    startMs,
    endMs,
    bucketMs: MINUTE_MS,
    bucketStartsMs,
    partialBucketStartMs,
    rows,
    markers,
  };
}

const VERB_LABELS: Readonly<Record<string, string>> = {
  pause: "Paused",
  resume: "Resumed",
  hold: "Holding for traffic",
  complete: "Completed",
  abort: "Aborted",
  revert: "Reverted by its guard",
};

function verbLabel(verb: string): string {
  return VERB_LABELS[verb] ?? verb;
}
