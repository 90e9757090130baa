/**
 * Wording shared by the console and what Limitplane says outside it (audit summaries, alerts,
 * webhook payloads): rates, windows, limits, factors and UTC times. Pure and deterministic; the
 * console's formatting re-exports these from lib/console/format.ts, so there is one implementation
 * of each.
 */
import type { TLimitSpec as LimitSpec } from "@limitplane/enforcer/policy";
import { assertNever, formatDurationMs, formatNumber, NO_VALUE } from "@limitplane/enforcer/policy";

const SECOND_MS = 1000;
const MINUTE_MS = 60 * SECOND_MS;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;

/**
 * A sustained rate in the unit that keeps the number at 1 or more: `10` → `"10/s"`,
 * `0.5` → `"30/min"`, `0.01` → `"36/h"`, `0.000_01` → `"0.86/d"`. Zero → `"0/s"`; negative or not
 * a finite number → {@link NO_VALUE}.
 */
export function formatRatePerSec(ratePerSec: number): string {
  if (!Number.isFinite(ratePerSec) || ratePerSec < 0) return NO_VALUE;
  if (ratePerSec === 0 || ratePerSec >= 1)
    return `${formatNumber(ratePerSec, { maximumFractionDigits: 3 })}/s`;
  const perMinute = ratePerSec * 60;
  if (perMinute >= 1) return `${formatNumber(perMinute, { maximumFractionDigits: 3 })}/min`;
  const perHour = perMinute * 60;
  if (perHour >= 1) return `${formatNumber(perHour, { maximumFractionDigits: 3 })}/h`;
  return `${formatNumber(perHour * 24, { maximumFractionDigits: 3 })}/d`;
}

/**
 * A window length as the tail of "N per …": `60_000` → `"minute"`, `1000` → `"second"`,
 * `3_600_000` → `"hour"`, `86_400_000` → `"day"`, anything else `formatDurationMs` (`"30 s"`).
 */
export function formatWindow(windowMs: number): string {
  switch (windowMs) {
    case SECOND_MS:
      return "second";
    case MINUTE_MS:
      return "minute";
    case HOUR_MS:
      return "hour";
    case DAY_MS:
      return "day";
    default:
      return formatDurationMs(windowMs);
  }
}

/** The words for an algorithm: `"token-bucket"` → `"token bucket"`. */
export function formatAlgorithm(algorithm: LimitSpec["algorithm"]): string {
  return algorithm.replace("-", " ");
}

/**
 * What a limit allows, in the terms a customer plans with (units of cost; most endpoints cost 1):
 * token bucket and leaky meter `"10/s, bursts of 20"`; fixed window `"100 per minute"`; sliding
 * log and sliding window `"100 per rolling minute"`.
 */
export function formatLimit(spec: LimitSpec): string {
  switch (spec.algorithm) {
    case "token-bucket":
      return `${formatRatePerSec(spec.refillPerSec)}, bursts of ${formatNumber(spec.capacity)}`;
    case "leaky-meter":
      return `${formatRatePerSec(spec.drainPerSec)}, bursts of ${formatNumber(spec.burst)}`;
    case "fixed-window":
      return `${formatNumber(spec.limit)} per ${formatWindow(spec.windowMs)}`;
    case "sliding-log":
    case "sliding-window":
      return `${formatNumber(spec.limit)} per rolling ${formatWindow(spec.windowMs)}`;
    default:
      return assertNever(spec);
  }
}

/** An incident factor: `2` → `"×2"`, `0.5` → `"×0.5"`. */
export function formatFactor(factor: number): string {
  if (!Number.isFinite(factor)) return NO_VALUE;
  return `×${formatNumber(factor, { maximumFractionDigits: 3 })}`;
}

/**
 * The same instant for every viewer, used where the operator's time zone is not known (a server
 * render): `"2025-03-04 10:05:07 UTC"`. Not a valid instant → {@link NO_VALUE}.
 */
export function formatUtcTimestamp(atMs: number): string {
  if (!Number.isFinite(atMs)) return NO_VALUE;
  const date = new Date(atMs);
  if (Number.isNaN(date.getTime())) return NO_VALUE;
  return `${date.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

/**
 * A clock time in UTC for a sentence read anywhere (a webhook, an audit summary):
 * `"14:36 UTC"`, or with the date when it is not the same UTC day as `relativeToMs`:
 * `"2026-12-05 14:36 UTC"`. Not a valid instant → {@link NO_VALUE}.
 */
export function formatUtcClock(atMs: number, relativeToMs: number = atMs): string {
  const date = new Date(atMs);
  if (Number.isNaN(date.getTime())) return NO_VALUE;
  const iso = date.toISOString();
  const sameDay =
    Number.isFinite(relativeToMs) &&
    Math.floor(atMs / DAY_MS) === Math.floor(relativeToMs / DAY_MS);
  return `${sameDay ? "" : `${iso.slice(0, 10)} `}${iso.slice(11, 16)} UTC`;
}
