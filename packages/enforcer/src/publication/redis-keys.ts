/**
 * Every Redis key and channel the enforcer runtime reads or writes besides the limiter state (which
 * the store owns). All start with the installation's REDIS_KEY_PREFIX (`lib/server/env.ts`).
 *
 * | Name | Type | Written by | TTL |
 * | --- | --- | --- | --- |
 * | `{policy}:head`, `{policy}:snapshot:<v>`, `{policy}:deltas` | the published policy (`keys.ts`) | the publisher | none (replaced snapshots expire) |
 * | `policy:announce` | channel, JSON `{version, base, checksum, publishedAt, delta}` (`keys.ts`) | the publisher | - |
 * | `enforcers` | sorted set: enforcer id, scored by its last heartbeat (epoch ms) | each enforcer | members older than an hour are trimmed on every heartbeat |
 * | `enforcer:<id>` | hash: what one enforcer runs and reports (see `heartbeat.ts`) | that enforcer | `heartbeatTtlMs` |
 * | `metrics:sec:<epochSecond>` | hash `<scope>\|allowed` ... and `@latency\|...` | every enforcer, HINCRBY | `secondBucketTtlMs` (3 h) |
 * | `metrics:min:<epochMinute>` | the same fields, per minute (what the worker rolls up); and the outbound limiters' `outbound:<name>\|...` figures (`outbound-minutes.ts`) | every enforcer, HINCRBY; outbound limiters, a script | `minuteBucketTtlMs` (6 h) |
 * | `rejections:<customerId>` | list of JSON `{atMs, scope, endpointClass, enforcerId}`, newest first | every enforcer | `rejectionsTtlMs` (1 h), capped |
 * | `redis:failovers` | sorted set: JSON `{atMs, from, to, enforcerId}` of each change of primary an enforcer saw, scored by `atMs` (`redis-topology.ts`) | every enforcer | members older than 7 days trimmed on every write |
 * | `rejections:customers` | sorted set: customer id, scored by its latest rejection (epoch ms) | every enforcer | capped at 1000 members |
 * | `rejected:min:<epochMinute>` | sorted set: `<customerId>\|<scope>` by that minute's rejections (`rejection-tally.ts`) | every enforcer | `minuteBucketTtlMs` (6 h), capped at 1000 members |
 *
 * `<epochSecond>` is `floor(ms / 1000)` and `<epochMinute>` is `floor(ms / 60000)` of the wall
 * clock, so every enforcer adds into the same buckets.
 */

/** Fields a metrics bucket holds, per scope: `<scope>|<count>`. Scopes never contain `|`. */
export const SCOPE_COUNT_FIELDS = ["allowed", "rejected", "wouldReject", "degraded"] as const;
export type ScopeCountField = (typeof SCOPE_COUNT_FIELDS)[number];

/**
 * Prefix of the fields that are not per scope (latency, sources, failures). No scope starts with
 * `@` (the scope grammar starts every scope with a letter), so the two never collide.
 */
export const NON_SCOPE_FIELD_PREFIX = "@";

export interface EnforcerRedisNames {
  readonly enforcers: string;
  enforcer(enforcerId: string): string;
  metricsSecond(epochSecond: number): string;
  metricsMinute(epochMinute: number): string;
  rejections(customerId: string): string;
  readonly rejectedCustomers: string;
  readonly redisFailovers: string;
}

export function enforcerRedisNames(prefix: string): EnforcerRedisNames {
  return {
    enforcers: `${prefix}enforcers`,
    enforcer: (enforcerId) => `${prefix}enforcer:${enforcerId}`,
    metricsSecond: (epochSecond) => `${prefix}metrics:sec:${epochSecond}`,
    metricsMinute: (epochMinute) => `${prefix}metrics:min:${epochMinute}`,
    rejections: (customerId) => `${prefix}rejections:${customerId}`,
    rejectedCustomers: `${prefix}rejections:customers`,
    redisFailovers: `${prefix}redis:failovers`,
  };
}

function isScopeCountField(text: string): text is ScopeCountField {
  return SCOPE_COUNT_FIELDS.some((field) => field === text);
}

/** The per-scope field name in a metrics bucket. */
export function scopeField(scope: string, count: ScopeCountField): string {
  return `${scope}|${count}`;
}

/**
 * Splits a metrics bucket's fields back into per-scope counts (what the worker and the console
 * read). Fields that are not per scope, or not recognised, are skipped; a count that is not a
 * whole number reads as 0.
 */
export function parseScopeCounts(
  fields: Readonly<Record<string, string>>,
): Map<string, Record<ScopeCountField, number>> {
  const byScope = new Map<string, Record<ScopeCountField, number>>();
  for (const [field, raw] of Object.entries(fields)) {
    if (field.startsWith(NON_SCOPE_FIELD_PREFIX)) continue;
    const separator = field.lastIndexOf("|");
    if (separator <= 0) continue;
    const count = field.slice(separator + 1);
    if (!isScopeCountField(count)) continue;
    const scope = field.slice(0, separator);
    let counts = byScope.get(scope);
    if (counts === undefined) {
      counts = { allowed: 0, rejected: 0, wouldReject: 0, degraded: 0 };
      byScope.set(scope, counts);
    }
    const value = Number(raw);
    counts[count] = Number.isSafeInteger(value) && value >= 0 ? value : 0;
  }
  return byScope;
}

/** A count field's value: a whole number >= 0, else 0. */
function countOf(raw: string | undefined): number {
  const value = Number(raw);
  return Number.isSafeInteger(value) && value >= 0 ? value : 0;
}

/**
 * A metrics bucket's decisions by source, summed (`@source|<source>`), and those made without
 * Redis by failure (`@failure|store-error`, `@failure|timeout`, `@failure|circuit-open`), as the
 * enforcer's flusher writes them (`reporters.ts`, `bucketFields`).
 */
export function parseDecisionCounts(fields: Readonly<Record<string, string>>): {
  decisions: number;
  withoutStore: { storeError: number; timeout: number; circuitOpen: number };
} {
  let decisions = 0;
  const sourcePrefix = `${NON_SCOPE_FIELD_PREFIX}source|`;
  for (const [field, raw] of Object.entries(fields)) {
    if (field.startsWith(sourcePrefix)) decisions += countOf(raw);
  }
  const failure = (name: string) => countOf(fields[`${NON_SCOPE_FIELD_PREFIX}failure|${name}`]);
  return {
    decisions,
    withoutStore: {
      storeError: failure("store-error"),
      timeout: failure("timeout"),
      circuitOpen: failure("circuit-open"),
    },
  };
}
