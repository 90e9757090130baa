/**
 * Rates as percentages, one implementation for the console's pages and the alerts' messages (the
 * console's formatting re-exports it from lib/console/format.ts).
 */
import { formatNumber, NO_VALUE } from "@limitplane/enforcer/policy";

/**
 * A rejection rate (a fraction from 0 to 1) as a percentage a person can compare at a glance:
 * `0` → `"0%"`, `0.0004` → `"<0.1%"`, `0.025` → `"2.5%"`, `0.4` → `"40%"`, `0.9996` → `">99.9%"`,
 * `1` → `"100%"`. Below 10% one decimal is shown, above it none, and a rate that is not exactly 0
 * or 1 never rounds to look like one. `null` (no traffic) or not a finite number → {@link NO_VALUE}.
 */
export function formatPercent(rate: number | null): string {
  if (rate === null || !Number.isFinite(rate)) return NO_VALUE;
  if (rate === 0) return "0%";
  if (rate === 1) return "100%";
  const percent = rate * 100;
  if (percent > 0 && percent < 0.1) return "<0.1%";
  if (percent < 100 && percent > 99.9) return ">99.9%";
  const digits = Math.abs(percent) < 10 ? 1 : 0;
  const rounded = formatNumber(percent, { maximumFractionDigits: digits });
  // 99.6% with no decimals would read "100%".
  if (rounded === "100" && percent < 100)
    return `${formatNumber(percent, { maximumFractionDigits: 1 })}%`;
  return `${rounded}%`;
}
