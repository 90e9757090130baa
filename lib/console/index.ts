/**
 * The console's pure building blocks: alerts, chart math, audit diffs, keyset cursors and
 * plain-language formatting. No I/O and no clock: time is always a parameter.
 *
 * Server code imports from here. Client components import the module they need directly
 * (`@/lib/console/format`), so a client bundle never pulls in the server-only parts (cursor
 * decoding brings in the control plane's error type).
 */

export {
  type ConsoleAlert,
  detectExpiringIncidents,
  detectRejectionRateAlerts,
  evaluateRejectionRates,
  INCIDENT_EXPIRY_ALERT_DEFAULTS,
  type IncidentExpiryAlert,
  type IncidentExpiryAlertOptions,
  type IncidentForExpiry,
  REJECTION_RATE_ALERT_DEFAULTS,
  type RejectionRateAlert,
  type RejectionRateAlertOptions,
  type RejectionRateVerdict,
  type ScopeRateEvaluation,
  type WindowRate,
} from "./alerts";
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
  hasNoTraffic,
  isChartRangeId,
  isChartRow,
  isDryRunScope,
  isolatedPointIndexes,
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
  buildPageLinks,
  type PageLinkOptions,
  type PageLinks,
  type SearchParamsRecord,
} from "./cursor";
export {
  describeEnforcerLag,
  type EnforcerLag,
  type EnforcerVersionFacts,
  type PublishedVersionFacts,
} from "./fleet-lag";
export {
  type FormatNumberOptions,
  formatActorKind,
  formatAlgorithm,
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
export {
  type CountTotals,
  groupByScope,
  isUsableCount,
  MINUTE_MS,
  type ScopeMinuteCount,
  sumRange,
} from "./minute-counts";
export { MAX_REASON_LENGTH, reasonProblem } from "./reason";
