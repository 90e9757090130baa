/**
 * The console's pure building blocks: chart math, audit diffs, page links and plain-language
 * formatting. No I/O and no clock: time is always a parameter. (The alert rules and per-minute
 * counts they draw are the control plane's: @/lib/control.)
 *
 * Server code imports from here. Client components import the module they need directly
 * (`@/lib/console/format`), so a client bundle holds only what it uses.
 */

export {
  type AuditChange,
  type AuditChangeKind,
  type AuditDiffOptions,
  type DescribableLimit,
  type DiffPathSegment,
  describeLimitChange,
  diffAuditValues,
  formatDiffPath,
  renderValue,
} from "./audit-diff";
export {
  type ChartMarkerGroup,
  groupChartMarkers,
  type MarkerGroupOptions,
  partialBucketIndex,
  plotFraction,
  type SplitLineValues,
  splitAtPartialBucket,
} from "./chart-overlays";
export {
  auditEntryHref,
  buildChartMarkers,
  buildDryRunSeries,
  buildFailoverMarkers,
  buildRejectionRateSeries,
  CHART_RANGES,
  type ChartMarker,
  type ChartMarkerInput,
  type ChartMarkerKind,
  type ChartRange,
  type ChartRangeId,
  type ChartRow,
  type ChartWindow,
  type ChartWindowOptions,
  chartWindow,
  type DryRunChartData,
  type DryRunPair,
  type DryRunPoint,
  type DryRunSeries,
  defaultChartRangeId,
  type FailoverMarkerInput,
  hasNoTraffic,
  isChartRangeId,
  isChartRow,
  isDryRunScope,
  isolatedPointIndexes,
  MARKER_KIND_WORDS,
  markerKindForAction,
  type RatePoint,
  type RejectionRateChartData,
  type RejectionRateSeriesOptions,
  type ScopeRateSeries,
  type TimeTickOptions,
  timeTicks,
  toDryRunChartRows,
  toRateChartRows,
} from "./chart-series";
export {
  describeEnforcerLag,
  type EnforcerLag,
  type EnforcerVersionFacts,
  type PublishedVersionFacts,
} from "./fleet-lag";
export {
  type ClockTimeOptions,
  type FormatNumberOptions,
  formatActorKind,
  formatAlgorithm,
  formatClockTime,
  formatCompactNumber,
  formatCountdown,
  formatDurationMs,
  formatFactor,
  formatLimit,
  formatLocalTimestamp,
  formatNumber,
  formatPercent,
  formatRateChange,
  formatRatePerSec,
  formatRelativeTime,
  formatTimeSpan,
  formatTimeTick,
  formatUtcClockTime,
  formatUtcTimestamp,
  formatWindow,
  type LocalTimestampOptions,
  NO_VALUE,
  type TimestampLabel,
  type TimestampLabelOptions,
  timestampLabel,
  toEpochMs,
  toIsoString,
} from "./format";
export { describeNoPolicy, type NoPolicyFacts, type NoPolicyNotice } from "./no-policy";
export {
  buildPageLinks,
  type PageLinkOptions,
  type PageLinks,
  type SearchParamsRecord,
} from "./page-links";
export { describePropagation, joinNames, type RegionState } from "./propagation";
export { MAX_REASON_LENGTH, reasonProblem } from "./reason";
