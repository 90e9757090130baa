/**
 * How many of each customer's requests were rejected, per minute and binding limit: what the
 * console ranks "who is being rejected" by. Written by the runtime's `reporters.ts` (the
 * `MetricsFlusher`, beside the recent-rejection lists), read back here; kept apart from
 * `redis-keys.ts` so the protocol for this one report lives in one file.
 *
 * | Name | Type | Written by | Bound |
 * | --- | --- | --- | --- |
 * | `rejected:min:<epochMinute>` | sorted set: `<customerId>\|<scope>`, scored by that minute's rejections | every enforcer, ZINCRBY | {@link REJECTION_TALLY_KEPT} members (the smallest counts are dropped); TTL `minuteBucketTtlMs` (6 h) |
 *
 * The recent-rejection lists (`rejections:<customerId>`) say *what* was rejected, newest first;
 * `rejections:customers` is ordered by the latest rejection. Neither can rank by count, so this
 * tally does. It is bounded per minute, not per customer: a million customers rejected in one
 * minute leave the 1 000 members with the largest counts (each enforcer trims after adding), so a
 * reader of N minutes reads at most N x 1 000 members whatever the customer count. A member trimmed
 * and added again later in the minute restarts from its later counts: the tail undercounts, the
 * top (what the console shows) does not.
 */
import { isCustomerId } from "../policy/names";

/**
 * The tally's stand-in for "no customer": anonymous requests are counted per limit, never per
 * address. Not a valid customer id (`policy/names.ts`), so it cannot collide with one.
 */
export const ANONYMOUS_TALLY_ID = "~anonymous";

/** Most members one minute's tally keeps: the customer-and-scope pairs rejected most. */
export const REJECTION_TALLY_KEPT = 1_000;

/** The tally key of a minute (`floor(epochMs / 60 000)` of the wall clock). */
export function rejectionTallyKey(prefix: string, epochMinute: number): string {
  return `${prefix}rejected:min:${epochMinute}`;
}

/** A member: customer ids and scopes never contain `|` (`policy/names.ts`, the scope grammar). */
export function rejectionTallyMember(customerId: string, scope: string): string {
  return `${customerId}|${scope}`;
}

/** The commands the reader sends; an ioredis client satisfies it. */
export interface RejectionTallyReadingRedis {
  zrevrange(key: string, start: number, stop: number, withScores: "WITHSCORES"): Promise<string[]>;
}

/** One customer's (or, as {@link ANONYMOUS_TALLY_ID}, anonymous traffic's) rejections by one limit in one minute. */
export interface RejectionTallyEntry {
  readonly epochMinute: number;
  readonly customerId: string;
  readonly scope: string;
  readonly count: number;
}

const SCOPE_TEXT = /^[A-Za-z][^|\s]{0,499}$/;

/**
 * The tally of every minute from `fromMinute` to `toMinute` (both included), at most
 * `perMinute` members of each (the largest counts). Members that are not a customer id and a
 * scope, and counts that are not whole numbers above 0, are skipped: the tally is a diagnostic.
 */
export async function readRejectionTally(
  redis: RejectionTallyReadingRedis,
  prefix: string,
  fromMinute: number,
  toMinute: number,
  perMinute: number = REJECTION_TALLY_KEPT,
): Promise<RejectionTallyEntry[]> {
  if (!(Number.isSafeInteger(fromMinute) && Number.isSafeInteger(toMinute))) {
    throw new RangeError("fromMinute and toMinute must be whole minutes");
  }
  const minutes: number[] = [];
  for (let minute = fromMinute; minute <= toMinute; minute++) minutes.push(minute);
  const replies = await Promise.all(
    minutes.map((minute) =>
      redis.zrevrange(rejectionTallyKey(prefix, minute), 0, perMinute - 1, "WITHSCORES"),
    ),
  );
  const entries: RejectionTallyEntry[] = [];
  replies.forEach((raw, index) => {
    const epochMinute = minutes[index] ?? 0;
    for (let at = 0; at + 1 < raw.length; at += 2) {
      const member = raw[at] ?? "";
      const count = Number(raw[at + 1]);
      const separator = member.indexOf("|");
      if (separator <= 0 || !(Number.isSafeInteger(count) && count > 0)) continue;
      const customerId = member.slice(0, separator);
      const scope = member.slice(separator + 1);
      if (customerId !== ANONYMOUS_TALLY_ID && !isCustomerId(customerId)) continue;
      if (!SCOPE_TEXT.test(scope)) continue;
      entries.push({ epochMinute, customerId, scope, count });
    }
  });
  return entries;
}
