/**
 * The per-minute rejection tally rolled up over a span: per customer, its rejections, the limit
 * that rejected it most (the binding scope) and a sparkline. Pure: the reads are in
 * `list-rejected-customers.ts`.
 */
import type { RejectionTallyEntry } from "@limitplane/enforcer/publication";

/** Most points in a sparkline: longer spans add minutes into each point. */
export const MAX_SPARKLINE_POINTS = 60;

export interface RejectedScope {
  readonly scope: string;
  readonly rejected: number;
}

export interface RolledUpCustomer {
  readonly customerId: string;
  readonly rejected: number;
  /** The scope that rejected it most over the span (the first by name on a tie). */
  readonly bindingScope: string;
  /** Every scope that rejected it, the most first. */
  readonly scopes: readonly RejectedScope[];
  /** Rejections per point, oldest first; each point is `sparklineMinutes` long. */
  readonly sparkline: readonly number[];
  /** The last minute with a rejection, epoch ms of its start. */
  readonly lastRejectedMinuteMs: number;
}

export interface RolledUpTally {
  /** The most rejected first (then by id, so the order is stable). */
  readonly customers: readonly RolledUpCustomer[];
  readonly totalRejected: number;
  readonly sparklineMinutes: number;
}

/** Adds the tally of `fromMinute` to `toMinute` (both included) up per customer. */
export function rollUpRejectionTally(
  entries: readonly RejectionTallyEntry[],
  fromMinute: number,
  toMinute: number,
): RolledUpTally {
  const spanMinutes = Math.max(1, toMinute - fromMinute + 1);
  const sparklineMinutes = Math.ceil(spanMinutes / MAX_SPARKLINE_POINTS);
  const points = Math.ceil(spanMinutes / sparklineMinutes);
  const byCustomer = new Map<
    string,
    { rejected: number; scopes: Map<string, number>; sparkline: number[]; lastMinute: number }
  >();
  let totalRejected = 0;
  for (const entry of entries) {
    if (entry.epochMinute < fromMinute || entry.epochMinute > toMinute) continue;
    let customer = byCustomer.get(entry.customerId);
    if (customer === undefined) {
      customer = {
        rejected: 0,
        scopes: new Map(),
        sparkline: new Array<number>(points).fill(0),
        lastMinute: entry.epochMinute,
      };
      byCustomer.set(entry.customerId, customer);
    }
    customer.rejected += entry.count;
    customer.scopes.set(entry.scope, (customer.scopes.get(entry.scope) ?? 0) + entry.count);
    const point = Math.floor((entry.epochMinute - fromMinute) / sparklineMinutes);
    customer.sparkline[point] = (customer.sparkline[point] ?? 0) + entry.count;
    customer.lastMinute = Math.max(customer.lastMinute, entry.epochMinute);
    totalRejected += entry.count;
  }
  const customers: RolledUpCustomer[] = [];
  for (const [customerId, customer] of byCustomer) {
    const scopes = [...customer.scopes]
      .map(([scope, rejected]) => ({ scope, rejected }))
      .sort((a, b) => b.rejected - a.rejected || a.scope.localeCompare(b.scope));
    customers.push({
      customerId,
      rejected: customer.rejected,
      bindingScope: scopes[0]?.scope ?? "",
      scopes,
      sparkline: customer.sparkline,
      lastRejectedMinuteMs: customer.lastMinute * 60_000,
    });
  }
  customers.sort((a, b) => b.rejected - a.rejected || a.customerId.localeCompare(b.customerId));
  return { customers, totalRejected, sparklineMinutes };
}
