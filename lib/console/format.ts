/**
 * Plain-language formatting for the console: numbers, percentages, durations, countdowns, relative
 * times, rates and limits. Pure and deterministic: the locale is fixed (`en-US` digits and
 * separators) so a server render and a client render of the same value agree, and every function
 * says what it returns for a value that is missing or not a finite number (`NO_VALUE`).
 */
import {
  type FormatNumberOptions,
  formatDurationMs,
  formatNumber,
  formatSeconds,
  NO_VALUE,
} from "@limitplane/enforcer/policy";
import { formatPercent } from "@/lib/control/format-percent";
import {
  formatAlgorithm,
  formatFactor,
  formatLimit,
  formatRatePerSec,
  formatUtcTimestamp,
  formatWindow,
} from "@/lib/control/format-words";

// Numbers and durations have one implementation, shared with the policy's messages; percentages,
// limits and UTC times one, shared with the alerts, audit summaries and webhooks.
export {
  type FormatNumberOptions,
  formatAlgorithm,
  formatDurationMs,
  formatFactor,
  formatLimit,
  formatNumber,
  formatPercent,
  formatRatePerSec,
  formatUtcTimestamp,
  formatWindow,
  NO_VALUE,
};

const SECOND_MS = 1000;
const MINUTE_MS = 60 * SECOND_MS;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;

/**
 * Short form for chart axes: `950` → `"950"`, `1_234` → `"1.2k"`, `3_400_000` → `"3.4M"`,
 * `2e9` → `"2B"`. Not a finite number → {@link NO_VALUE}.
 */
export function formatCompactNumber(value: number): string {
  if (!Number.isFinite(value)) return NO_VALUE;
  if (Math.abs(value) < 1000) return formatNumber(value, { maximumFractionDigits: 1 });
  const units: readonly (readonly [number, string])[] = [
    [1e3, "k"],
    [1e6, "M"],
    [1e9, "B"],
  ];
  for (const [index, [size, suffix]] of units.entries()) {
    const scaled = Math.round((value / size) * 10) / 10;
    // 999_950 rounds to "1000k": move up to the next unit unless there is none.
    if (Math.abs(scaled) < 1000 || index === units.length - 1) {
      return `${formatNumber(scaled, { maximumFractionDigits: 1 })}${suffix}`;
    }
  }
  return formatNumber(value, { maximumFractionDigits: 1 });
}

/** A change in a rate, in percentage points with a sign: `0.98` → `"+98 pts"`, `-0.05` → `"−5 pts"`. */
export function formatRateChange(change: number): string {
  if (!Number.isFinite(change)) return NO_VALUE;
  const points = change * 100;
  const digits = Math.abs(points) < 10 ? 1 : 0;
  const magnitude = formatNumber(Math.abs(points), { maximumFractionDigits: digits });
  if (magnitude === "0") return "0 pts";
  return `${points > 0 ? "+" : "−"}${magnitude} pts`;
}

/**
 * Time left until an expiry, for a ticking display: seconds are rounded up (it reads `"1 s"` until
 * the instant itself), larger units are cut, never rounded up, so it never promises more time than
 * is left: `872_000` → `"14 min 32 s"`, `7_530_000` → `"2 h 5 min"`, `0` or less → `"expired"`.
 * Not a finite number → {@link NO_VALUE}.
 */
export function formatCountdown(remainingMs: number): string {
  if (Number.isNaN(remainingMs)) return NO_VALUE;
  if (remainingMs <= 0) return "expired";
  if (remainingMs === Number.POSITIVE_INFINITY) return NO_VALUE;
  return formatSeconds(Math.ceil(remainingMs / SECOND_MS), Math.floor);
}

/**
 * How long ago (or until) `atMs` is from `nowMs`, in words: within 45 s either way `"just now"`;
 * then `"3 min ago"` / `"in 3 min"`, `"2 h ago"`, `"4 d ago"` (rounded to the nearest unit, at
 * least 1). Either argument not a finite number → {@link NO_VALUE}.
 */
export function formatRelativeTime(atMs: number, nowMs: number): string {
  if (!Number.isFinite(atMs) || !Number.isFinite(nowMs)) return NO_VALUE;
  const agoMs = nowMs - atMs;
  const sizeMs = Math.abs(agoMs);
  if (sizeMs < 45 * SECOND_MS) return "just now";
  let phrase: string;
  if (sizeMs < 59.5 * MINUTE_MS) phrase = `${Math.max(1, Math.round(sizeMs / MINUTE_MS))} min`;
  else if (sizeMs < 23.5 * HOUR_MS) phrase = `${Math.max(1, Math.round(sizeMs / HOUR_MS))} h`;
  else phrase = `${Math.max(1, Math.round(sizeMs / DAY_MS))} d`;
  return agoMs > 0 ? `${phrase} ago` : `in ${phrase}`;
}

/**
 * Milliseconds since the epoch from what a timestamp arrives as: a number of milliseconds, a
 * `Date`, or an ISO 8601 string. Anything unreadable → `null`, never `NaN`.
 */
export function toEpochMs(value: string | number | Date): number | null {
  const ms =
    typeof value === "number" ? value : value instanceof Date ? value.getTime() : Date.parse(value);
  return Number.isFinite(ms) ? ms : null;
}

export interface LocalTimestampOptions {
  /**
   * IANA time zone. Leave unset in the browser to use the operator's own.
   * @default the runtime's time zone
   */
  timeZone?: string;
  /**
   * BCP 47 locale for the order of date parts and the clock style.
   * @default the runtime's locale
   */
  locale?: string;
}

/**
 * An instant in a time zone, with the zone named so a screenshot is never ambiguous:
 * `"Mar 4, 2025, 11:05:07 AM CET"`. An unknown time zone or locale falls back to
 * {@link formatUtcTimestamp} instead of throwing. Not a valid instant → {@link NO_VALUE}.
 */
export function formatLocalTimestamp(atMs: number, options: LocalTimestampOptions = {}): string {
  if (!Number.isFinite(atMs) || Number.isNaN(new Date(atMs).getTime())) return NO_VALUE;
  try {
    return new Intl.DateTimeFormat(options.locale, {
      dateStyle: "medium",
      timeStyle: "long",
      // One clock across the console: 24-hour, as the chart axes and the clock times read.
      hourCycle: "h23",
      timeZone: options.timeZone,
    }).format(atMs);
  } catch (error: unknown) {
    if (error instanceof RangeError) return formatUtcTimestamp(atMs);
    throw error;
  }
}

/** The ISO 8601 form for `dateTime` attributes and hover titles; invalid → `null`. */
export function toIsoString(atMs: number): string | null {
  if (!Number.isFinite(atMs)) return null;
  const date = new Date(atMs);
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}

export interface TimestampLabelOptions extends LocalTimestampOptions {
  /**
   * The viewer's current time, or `null` before it is known (a server render, or a client render
   * before mount): the label is then the same UTC text everywhere, so hydration matches.
   */
  nowMs: number | null;
  /**
   * Say how long ago instead of the date, when within `relativeWithinMs`.
   * @default false
   */
  relative?: boolean;
  /**
   * How far from now a time may be and still be said relatively.
   * @default 86_400_000 (1 day)
   */
  relativeWithinMs?: number;
  /**
   * Weekday and time only (`"Tue 14:05"`), for tables and legends where the full date repeats.
   * The hover title keeps the full time.
   * @default false
   */
  short?: boolean;
}

export interface TimestampLabel {
  /** What to show. */
  readonly text: string;
  /** What to show on hover: the absolute time, always with its ISO 8601 form. */
  readonly title: string;
  /** For `<time dateTime>`; `null` for an invalid time. */
  readonly iso: string | null;
}

/**
 * The text and hover title of a timestamp for a viewer: UTC until the viewer's clock is known;
 * then local, or relative ("3 min ago") when asked and recent. Invalid → `"unknown time"`.
 */
export function timestampLabel(atMs: number, options: TimestampLabelOptions): TimestampLabel {
  const iso = toIsoString(atMs);
  if (iso === null) return { text: "unknown time", title: "unknown time", iso: null };
  if (options.nowMs === null) return { text: formatUtcTimestamp(atMs), title: iso, iso };
  const local = formatLocalTimestamp(atMs, options);
  const withinMs = options.relativeWithinMs ?? DAY_MS;
  if (options.relative && Math.abs(options.nowMs - atMs) <= withinMs) {
    return { text: formatRelativeTime(atMs, options.nowMs), title: `${local} (${iso})`, iso };
  }
  if (options.short) {
    return { text: formatTimeTick(atMs, DAY_MS, options), title: `${local} (${iso})`, iso };
  }
  return { text: local, title: iso, iso };
}

const UTC_WEEKDAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"] as const;

export interface ClockTimeOptions extends LocalTimestampOptions {
  /** `"14:05:07"`. @default false */
  withSeconds?: boolean;
  /** `"Tue 14:05"`, for spans longer than a day's hours. @default false */
  withWeekday?: boolean;
  /** `"14:05 CET"`: the zone named, so a time read alone is never ambiguous. @default true */
  withZone?: boolean;
}

/**
 * The console's one clock time, 24-hour, in the viewer's zone (or `timeZone`) with the zone named:
 * `"14:05 CET"`, `"Tue 14:05:07 CET"`. An unknown time zone or locale falls back to UTC. Not a
 * valid instant → {@link NO_VALUE}.
 */
export function formatClockTime(atMs: number, options: ClockTimeOptions = {}): string {
  if (!Number.isFinite(atMs) || Number.isNaN(new Date(atMs).getTime())) return NO_VALUE;
  const parts: Intl.DateTimeFormatOptions = {
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
    ...(options.withSeconds ? { second: "2-digit" } : {}),
    ...(options.withWeekday ? { weekday: "short" } : {}),
    ...((options.withZone ?? true) ? { timeZoneName: "short" } : {}),
  };
  try {
    return new Intl.DateTimeFormat(options.locale, { ...parts, timeZone: options.timeZone }).format(
      atMs,
    );
  } catch (error: unknown) {
    if (!(error instanceof RangeError)) throw error;
    return formatUtcClockTime(atMs, options);
  }
}

/**
 * {@link formatClockTime} in UTC, cut from the ISO form rather than made by Intl, so a server
 * render and a browser render say exactly the same before the viewer's zone is known:
 * `"14:05 UTC"`, `"Tue 14:05:07 UTC"`.
 */
export function formatUtcClockTime(
  atMs: number,
  options: Pick<ClockTimeOptions, "withSeconds" | "withWeekday" | "withZone"> = {},
): string {
  const iso = toIsoString(atMs);
  if (iso === null) return NO_VALUE;
  const weekday = options.withWeekday ? `${UTC_WEEKDAYS[new Date(atMs).getUTCDay()]} ` : "";
  const zone = (options.withZone ?? true) ? " UTC" : "";
  return `${weekday}${iso.slice(11, options.withSeconds ? 19 : 16)}${zone}`;
}

/**
 * A time-axis tick: `"14:05"` within a day's span, `"Tue 14:05"` for longer spans, so a day chart
 * says which day. Same time zone and locale options as {@link formatLocalTimestamp}.
 */
export function formatTimeTick(
  atMs: number,
  spanMs: number,
  options: LocalTimestampOptions = {},
): string {
  // The axis says the zone once, in its caption; each tick leaves it out.
  return formatClockTime(atMs, { ...options, withWeekday: spanMs > 12 * HOUR_MS, withZone: false });
}

/**
 * A bucket's span for a tooltip or table: `"14:05–14:06"`; with `withWeekday` (for charts that
 * cover more than a day's worth of hours) `"Tue 14:00–14:15"`.
 */
export function formatTimeSpan(
  startMs: number,
  endMs: number,
  options: LocalTimestampOptions & { withWeekday?: boolean } = {},
): string {
  const startSpanMs = options.withWeekday ? DAY_MS : 0;
  return `${formatTimeTick(startMs, startSpanMs, options)}–${formatTimeTick(endMs, 0, options)}`;
}

/**
 * What kind of actor made a change, in words that cannot be mistaken for a role (an operator
 * account may hold the viewer, operator or admin role): "console account", "API token",
 * "Limitplane itself". Keyed by the audit log's actor types (ACTOR_TYPES in
 * lib/control/change-context.ts); an unknown type is shown as it is.
 */
export function formatActorKind(type: string): string {
  switch (type) {
    case "operator":
      return "console account";
    case "token":
      return "API token";
    case "system":
      return "Limitplane itself";
    default:
      return type;
  }
}
