import { ANONYMOUS_TALLY_ID, readRejectionTally } from "@limitplane/enforcer/publication";
import { parseOptions } from "../change-context";
import type { RejectedCustomerDeps } from "../deps";
import {
  type ListRejectedCustomersOptions,
  ZListRejectedCustomersOptions,
} from "./rejected-customer-schemas";
import { type RejectedScope, rollUpRejectionTally } from "./roll-up-rejection-tally";

const MINUTE_MS = 60_000;

/** One customer the gateways rejected over the span. */
export interface RejectedCustomerRecord {
  readonly customerId: string;
  /** Null for a customer only the gateways know (not in the registry). */
  readonly displayName: string | null;
  /** Its registered tier; null when not in the registry. */
  readonly tier: string | null;
  readonly rejected: number;
  /** Rejections per minute, averaged over the span. */
  readonly rejectedPerMinute: number;
  /** The limit that rejected it most over the span. */
  readonly bindingScope: string;
  readonly scopes: readonly RejectedScope[];
  /** Rejections per point, oldest first; a point is `sparklineMinutes` long. */
  readonly sparkline: readonly number[];
  /** The start of the last minute with a rejection (ISO 8601). */
  readonly lastRejectedAt: string;
}

/** Requests without a customer rejected by one limit over the span (no address is kept). */
export interface RejectedAnonymousRecord {
  readonly scope: string;
  readonly rejected: number;
  readonly rejectedPerMinute: number;
  readonly sparkline: readonly number[];
  readonly lastRejectedAt: string;
}

/** Most anonymous limits listed: each is a limit, not a customer, so a handful says it all. */
const ANONYMOUS_LISTED = 10;

export interface RejectedCustomerPage {
  readonly from: string;
  /** The end of the span: now (the current minute is included, still counting). */
  readonly to: string;
  readonly minutes: number;
  readonly sparklineMinutes: number;
  /** The most rejected first, at most `limit` (or the `customerIds` asked for that were rejected). */
  readonly customers: readonly RejectedCustomerRecord[];
  /** Every identified customer's rejections in the span, listed or not. */
  readonly totalRejected: number;
  /** How many distinct customers were rejected in the span. */
  readonly rejectedCustomerCount: number;
  /**
   * Requests without a customer (keyed by address at the gateways), ranked per limit, the most
   * rejected first; at most 10. Addresses are never reported, raw or hashed.
   */
  readonly anonymous: readonly RejectedAnonymousRecord[];
  /** Every anonymous rejection in the span. */
  readonly anonymousRejected: number;
}

/**
 * The customers the gateways rejected most over the last `minutes`, from the enforcers' per-minute
 * tally (`rejection-tally.ts`): at most 1 000 customer-and-limit pairs a minute, so the read is
 * bounded by the span (at most 360 x 1 000 members), never by how many customers there are. The
 * listed ones are joined with the registry (one query).
 */
export async function listRejectedCustomers(
  options: ListRejectedCustomersOptions,
  deps: RejectedCustomerDeps,
): Promise<RejectedCustomerPage> {
  const input = parseOptions(ZListRejectedCustomersOptions, options);
  const nowMs = deps.clock.nowMs();
  const toMinute = Math.floor(nowMs / MINUTE_MS);
  const fromMinute = toMinute - input.minutes + 1;
  const tally = await readRejectionTally(deps.redis, deps.prefix, fromMinute, toMinute);
  const entries = tally.filter((entry) => entry.customerId !== ANONYMOUS_TALLY_ID);
  const rolled = rollUpRejectionTally(entries, fromMinute, toMinute);
  // Anonymous traffic rolled up per limit: the scope stands where a customer would.
  const anonymous = rollUpRejectionTally(
    tally
      .filter((entry) => entry.customerId === ANONYMOUS_TALLY_ID)
      .map((entry) => ({ ...entry, customerId: entry.scope })),
    fromMinute,
    toMinute,
  );
  const wanted = input.customerIds === undefined ? null : new Set(input.customerIds);
  const listed = (
    wanted === null
      ? rolled.customers
      : rolled.customers.filter((customer) => wanted.has(customer.customerId))
  ).slice(0, wanted === null ? input.limit : undefined);
  const registered = await deps.db.customer.findMany({
    where: { id: { in: listed.map((customer) => customer.customerId) } },
    select: { id: true, displayName: true, tier: true },
  });
  const byId = new Map(registered.map((row) => [row.id, row]));
  // The span so far: the current minute counts the seconds it has had.
  const spanMinutes = input.minutes - 1 + (nowMs - toMinute * MINUTE_MS) / MINUTE_MS;
  return {
    from: new Date(fromMinute * MINUTE_MS).toISOString(),
    to: new Date(nowMs).toISOString(),
    minutes: input.minutes,
    sparklineMinutes: rolled.sparklineMinutes,
    customers: listed.map((customer) => {
      const row = byId.get(customer.customerId);
      return {
        customerId: customer.customerId,
        displayName: row?.displayName ?? null,
        tier: row?.tier ?? null,
        rejected: customer.rejected,
        rejectedPerMinute: customer.rejected / Math.max(spanMinutes, 1),
        bindingScope: customer.bindingScope,
        scopes: customer.scopes,
        sparkline: customer.sparkline,
        lastRejectedAt: new Date(customer.lastRejectedMinuteMs).toISOString(),
      };
    }),
    totalRejected: rolled.totalRejected,
    rejectedCustomerCount: rolled.customers.length,
    anonymous: anonymous.customers.slice(0, ANONYMOUS_LISTED).map((entry) => ({
      scope: entry.customerId,
      rejected: entry.rejected,
      rejectedPerMinute: entry.rejected / Math.max(spanMinutes, 1),
      sparkline: entry.sparkline,
      lastRejectedAt: new Date(entry.lastRejectedMinuteMs).toISOString(),
    })),
    anonymousRejected: anonymous.totalRejected,
  };
}
