/**
 * The customers the gateways see: what an enforcer reports of each identified customer (one its
 * gateway's `identify` returned, never a bare address) and the tier it arrived with, and how the
 * console reads it back. Written by the runtime's `seen-customers.ts`; kept apart from
 * `redis-keys.ts` so the protocol for this one report lives in one file.
 *
 * | Name | Type | Written by | Bound |
 * | --- | --- | --- | --- |
 * | `seen:customers` | sorted set: customer id, scored by when it was last seen (epoch ms) | every enforcer | {@link SEEN_CUSTOMERS_KEPT} members, none older than {@link SEEN_RETENTION_MS} |
 * | `seen:customer:<id>` | hash: tier (`-` for none or one that is not a tier name) -> last seen (epoch ms) | every enforcer | at most `maxTiersPerCustomer` fields per enforcer and hour; TTL {@link SEEN_RETENTION_MS} |
 * | `seen:overflow:<epochHour>` | hash: enforcer id -> sightings it did not report that hour (its cap was reached) | every enforcer | TTL 25 h |
 *
 * Each enforcer reports at most `maxCustomersPerHour` distinct customers per wall-clock hour, so
 * a flood of valid-looking API keys fills neither Redis nor the console: beyond the cap it only
 * counts (`seen:overflow`), and the console says how many went unreported.
 */
import { z } from "zod";
import { isCustomerId } from "../policy/names";

/** Most customers `seen:customers` holds (the most recently seen). */
export const SEEN_CUSTOMERS_KEPT = 10_000;
/** How long a customer stays listed after it was last seen: 7 days. */
export const SEEN_RETENTION_MS = 7 * 24 * 3_600_000;
/** How long an hour's overflow counts are kept: 25 h. */
export const SEEN_OVERFLOW_TTL_MS = 25 * 3_600_000;
/** The hash field of a sighting without a (valid) tier. */
export const NO_TIER_FIELD = "-";

export interface SeenCustomerNames {
  readonly customers: string;
  customer(customerId: string): string;
  overflow(epochHour: number): string;
}

export function seenCustomerNames(prefix: string): SeenCustomerNames {
  return {
    customers: `${prefix}seen:customers`,
    customer: (customerId) => `${prefix}seen:customer:${customerId}`,
    overflow: (epochHour) => `${prefix}seen:overflow:${epochHour}`,
  };
}

/** The commands the readers send; an ioredis client satisfies it. */
export interface SeenReadingRedis {
  zrevrange(key: string, start: number, stop: number, withScores: "WITHSCORES"): Promise<string[]>;
  zscore(key: string, member: string): Promise<string | null>;
  hgetall(key: string): Promise<Record<string, string>>;
}

/** A tier a gateway reported for the customer, and when it last did. */
export interface ReportedTier {
  /** Null: the gateway sent no tier, or one that is not a tier name. */
  readonly tier: string | null;
  readonly lastSeenAtMs: number;
}

/** One customer as the gateways reported it. */
export interface SeenCustomer {
  readonly id: string;
  readonly lastSeenAtMs: number;
  /** Most recent first; empty when the hash expired before the listing. */
  readonly tiers: readonly ReportedTier[];
}

/** A decimal count or epoch-ms text as the enforcers write it (never coerced from null or ""). */
const ZSeenTime = z
  .string()
  .regex(/^\d{1,16}$/)
  .transform(Number)
  .pipe(z.number().int().max(Number.MAX_SAFE_INTEGER));
const TIER_FIELD = /^[a-z0-9][a-z0-9_-]{0,62}$/;

function parseTiers(fields: Readonly<Record<string, string>>): ReportedTier[] {
  const tiers: ReportedTier[] = [];
  for (const [field, raw] of Object.entries(fields)) {
    const at = ZSeenTime.safeParse(raw);
    if (!at.success) continue;
    if (field === NO_TIER_FIELD) tiers.push({ tier: null, lastSeenAtMs: at.data });
    else if (TIER_FIELD.test(field)) tiers.push({ tier: field, lastSeenAtMs: at.data });
    // Anything else was not written by an enforcer: skipped.
  }
  return tiers.sort((a, b) => b.lastSeenAtMs - a.lastSeenAtMs);
}

/**
 * The (at most `maxCustomers`) most recently seen customers, newest first, without their tiers
 * (ids and times only: one command). Members that are not customer ids are skipped.
 */
export async function readSeenCustomerIds(
  redis: Pick<SeenReadingRedis, "zrevrange">,
  prefix: string,
  maxCustomers: number = SEEN_CUSTOMERS_KEPT,
): Promise<{ readonly id: string; readonly lastSeenAtMs: number }[]> {
  const raw = await redis.zrevrange(
    seenCustomerNames(prefix).customers,
    0,
    maxCustomers - 1,
    "WITHSCORES",
  );
  const seen: { id: string; lastSeenAtMs: number }[] = [];
  for (let index = 0; index + 1 < raw.length; index += 2) {
    const id = raw[index] ?? "";
    const at = ZSeenTime.safeParse(raw[index + 1]);
    if (isCustomerId(id) && at.success) seen.push({ id, lastSeenAtMs: at.data });
  }
  return seen;
}

/** One customer's report, or null when no gateway reported it within the retention. */
export async function readSeenCustomer(
  redis: Pick<SeenReadingRedis, "zscore" | "hgetall">,
  prefix: string,
  customerId: string,
): Promise<SeenCustomer | null> {
  if (!isCustomerId(customerId)) return null;
  const names = seenCustomerNames(prefix);
  const [score, fields] = await Promise.all([
    redis.zscore(names.customers, customerId),
    redis.hgetall(names.customer(customerId)),
  ]);
  const tiers = parseTiers(fields);
  const at = ZSeenTime.safeParse(score);
  const lastSeenAtMs = Math.max(at.success ? at.data : 0, tiers[0]?.lastSeenAtMs ?? 0);
  if (!at.success && tiers.length === 0) return null;
  return { id: customerId, lastSeenAtMs, tiers };
}

/** Sightings the enforcers did not report in `epochHour` because their cap was reached. */
export async function readSeenOverflow(
  redis: Pick<SeenReadingRedis, "hgetall">,
  prefix: string,
  epochHour: number,
): Promise<{ readonly total: number; readonly enforcers: number }> {
  const fields = await redis.hgetall(seenCustomerNames(prefix).overflow(epochHour));
  let total = 0;
  let enforcers = 0;
  for (const raw of Object.values(fields)) {
    const count = ZSeenTime.safeParse(raw);
    if (!count.success || count.data === 0) continue;
    total += count.data;
    enforcers++;
  }
  return { total, enforcers };
}
