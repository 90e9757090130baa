/**
 * Numbers and durations in words, the one implementation of each: the policy's messages (a
 * guardrail's "the maximum is 24 h") and the console's displays ("1 h 30 min", "1,234.5") both
 * format through here, so a form's hint and the server's refusal read the same. Pure and
 * deterministic: the locale is fixed (`en-US` digits), so a server render and a client render
 * agree.
 */

/** What a missing value (no traffic, unknown, not a finite number) reads as. */
export const NO_VALUE = "—";

const SECOND_MS = 1000;
const MINUTE_MS = 60 * SECOND_MS;
const HOUR_MS = 60 * MINUTE_MS;

export interface FormatNumberOptions {
  /**
   * Most digits after the decimal point; the value is rounded to them. Ignored when
   * `maximumSignificantDigits` is given.
   * @default 2
   */
  readonly maximumFractionDigits?: number;
  /** Most significant digits, instead of fraction digits: `24.0166` with 4 → `"24.02"`. */
  readonly maximumSignificantDigits?: number;
  /**
   * Thousands separators: `"1,234"`; false: `"1234"`.
   * @default true
   */
  readonly useGrouping?: boolean;
}

const numberFormats = new Map<string, Intl.NumberFormat>();

function numberFormat(options: FormatNumberOptions): Intl.NumberFormat {
  const useGrouping = options.useGrouping ?? true;
  const digits =
    options.maximumSignificantDigits === undefined
      ? { maximumFractionDigits: options.maximumFractionDigits ?? 2 }
      : { maximumSignificantDigits: options.maximumSignificantDigits };
  const key = `${JSON.stringify(digits)}:${useGrouping}`;
  let format = numberFormats.get(key);
  if (format === undefined) {
    format = new Intl.NumberFormat("en-US", { ...digits, useGrouping });
    numberFormats.set(key, format);
  }
  return format;
}

/** `1234.5` → `"1,234.5"`. Not a finite number → {@link NO_VALUE}. */
export function formatNumber(value: number, options: FormatNumberOptions = {}): string {
  if (!Number.isFinite(value)) return NO_VALUE;
  const formatted = numberFormat(options).format(value);
  // Intl writes a rounded-to-zero negative as "-0".
  return formatted === "-0" ? "0" : formatted;
}

/** A ratio or quantity in a message: 4 significant digits, no separators (`"1000"`, `"0.3333"`). */
export function formatQuantity(value: number): string {
  return formatNumber(value, { maximumSignificantDigits: 4, useGrouping: false });
}

/** A duration in its largest unit, for messages: `"48 h"`, `"1.5 h"`, `"90 s"` → `"1.5 min"`. */
export function formatDuration(durationMs: number): string {
  if (durationMs >= HOUR_MS) return `${formatQuantity(durationMs / HOUR_MS)} h`;
  if (durationMs >= MINUTE_MS) return `${formatQuantity(durationMs / MINUTE_MS)} min`;
  return `${formatQuantity(durationMs / SECOND_MS)} s`;
}

/**
 * A duration in its two largest units, rounded to the smaller of them: `45_000` → `"45 s"`,
 * `840_000` → `"14 min"`, `90_000` → `"1 min 30 s"`, `7_500_000` → `"2 h 5 min"`,
 * `100_800_000` → `"1 d 4 h"`. Sub-second durations read `"0 s"` (or `"<1 s"` when not zero); a
 * negative duration is formatted by its size; not a finite number → {@link NO_VALUE}.
 */
export function formatDurationMs(durationMs: number): string {
  if (!Number.isFinite(durationMs)) return NO_VALUE;
  const sizeMs = Math.abs(durationMs);
  if (sizeMs > 0 && sizeMs < 500) return "<1 s";
  return formatSeconds(Math.round(sizeMs / SECOND_MS), Math.round);
}

/**
 * Whole seconds in their two largest units (`"14 min 32 s"`, `"2 h 5 min"`, `"1 d 4 h"`), each
 * larger unit taken from the one below with `round` (`Math.round` for a duration, `Math.floor`
 * for a countdown, which must never promise more time than is left).
 */
export function formatSeconds(seconds: number, round: (value: number) => number): string {
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return joinUnits(Math.floor(seconds / 60), "min", seconds % 60, "s");
  const minutes = round(seconds / 60);
  if (minutes < 24 * 60) return joinUnits(Math.floor(minutes / 60), "h", minutes % 60, "min");
  const hours = round(minutes / 60);
  return joinUnits(Math.floor(hours / 24), "d", hours % 24, "h");
}

function joinUnits(major: number, majorUnit: string, minor: number, minorUnit: string): string {
  return minor === 0 ? `${major} ${majorUnit}` : `${major} ${majorUnit} ${minor} ${minorUnit}`;
}
