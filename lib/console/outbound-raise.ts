/**
 * What a raise of an outbound budget does, in words: the preview of the console's form and the
 * banner of a raised budget say the same thing. Pure: safe in a client component.
 */
import { formatNumber, type TLimitSpec } from "@limitplane/enforcer/policy";
import { formatLimit, formatUtcClock } from "@/lib/control/format-words";

/** The budget's own numbers a raise replaces. */
export interface RaiseBase {
  readonly limit: TLimitSpec | null;
  readonly concurrency: { readonly max: number } | null;
}

/** The numbers in force while raised; null keeps the budget's own. */
export interface RaiseNumbers {
  readonly limit: TLimitSpec | null;
  readonly concurrencyMax: number | null;
}

/**
 * One line per number the raise changes, base then raised:
 * `"Limit: 10/s, bursts of 10 → 30/s, bursts of 30"`, `"In flight: at most 4 → at most 8"`.
 */
export function describeRaiseChanges(base: RaiseBase, raise: RaiseNumbers): string[] {
  const lines: string[] = [];
  if (raise.limit !== null) {
    lines.push(
      `Limit: ${base.limit === null ? "none" : formatLimit(base.limit)} → ${formatLimit(raise.limit)}`,
    );
  }
  if (raise.concurrencyMax !== null) {
    lines.push(
      `In flight: ${base.concurrency === null ? "no cap" : `at most ${formatNumber(base.concurrency.max)}`} → at most ${formatNumber(raise.concurrencyMax)}`,
    );
  }
  return lines;
}

/**
 * The banner of a raised budget: `"Raised until 14:05 UTC by Ada: the provider raised our quota"`
 * (with the date when the expiry is not on `nowMs`'s UTC day).
 */
export function describeRaiseBanner(
  raise: { readonly expiresAt: string; readonly owner: string; readonly reason: string },
  nowMs: number,
): string {
  return `Raised until ${formatUtcClock(Date.parse(raise.expiresAt), nowMs)} by ${raise.owner}: ${raise.reason}`;
}
