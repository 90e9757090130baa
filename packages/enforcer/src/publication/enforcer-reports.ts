/**
 * Reading back what enforcers report in Redis (written by the enforcer runtime's `reporters.ts`;
 * the names are in `redis-keys.ts`): their heartbeats and each customer's recent rejections. The
 * per-scope counts are read by `metrics-reader.ts`. The control plane depends on these readers and
 * the key names, never on the runtime.
 */
import { z } from "zod";
import { policyRedisNames } from "./keys";
import { enforcerRedisNames } from "./redis-keys";

/** The commands the readers send; an ioredis client satisfies it. */
export interface ReportReadingRedis {
  zrevrange(key: string, start: number, stop: number): Promise<string[]>;
  hmget(key: string, ...fields: string[]): Promise<(string | null)[]>;
  hgetall(key: string): Promise<Record<string, string>>;
  lrange(key: string, start: number, stop: number): Promise<string[]>;
}

/** The version at the head of the published policy, and when it reached Redis. */
export interface PublishedVersion {
  readonly version: number;
  /** When it reached Redis (Redis's clock), epoch ms; null if not recorded. */
  readonly publishedAtMs: number | null;
}

/** One enforcer's latest heartbeat hash, parsed. */
export interface EnforcerHeartbeat {
  readonly id: string;
  readonly host: string;
  readonly pid: number | null;
  readonly startedAtMs: number | null;
  /** Its last heartbeat, epoch ms (the enforcer's clock). */
  readonly heartbeatAtMs: number;
  /** The version it runs; null before it applied any. */
  readonly version: number | null;
  readonly appliedAtMs: number | null;
  /** How it got the version: `announcement`, `poll`, `startup`, ... */
  readonly appliedVia: string | null;
  readonly breakerState: string | null;
  readonly snapshotErrors: number;
  readonly lastSnapshotError: string | null;
  /**
   * Decisions it made without Redis since it started, by why (each decided by its limits'
   * failure policies); zeros from an enforcer too old to report them.
   */
  readonly decisionsWithoutStore: {
    /** Redis down or refusing (a lost or refused connection, an error reply). */
    readonly storeError: number;
    /** No answer in time: the connection was down at the timeout, or no reply within the wait. */
    readonly timeout: number;
    /** The circuit breaker answered without asking Redis. */
    readonly circuitOpen: number;
  };
  /** Store decisions that came late and were waited for, since it started. */
  readonly slowStoreDecisions: number;
  /** Its event-loop delay over its last heartbeat interval, ms; null when not reported. */
  readonly eventLoopDelayP99Ms: number | null;
  readonly eventLoopDelayMaxMs: number | null;
  /** The Redis topology it sees; null from an enforcer that has not read it (or too old to). */
  readonly redisTopology: {
    readonly mode: string;
    /** `host:port` of the primary it reaches; a Cluster's masters. */
    readonly primaries: readonly string[];
    readonly replicas: readonly string[];
    readonly sentinelName: string | null;
    /** Changes of primary it saw since it started. */
    readonly failoversSeen: number;
  } | null;
  /**
   * Set while it runs no policy (its heartbeat says `policy: none`): since when, what requests
   * get meanwhile, and how many it decided so since it started. Null when it runs one. An
   * enforcer too old to say so, with no version, is reported as running none since it started.
   */
  readonly noPolicy: {
    readonly sinceMs: number | null;
    readonly action: "admit" | "reject";
    readonly decisions: number;
  } | null;
  /**
   * Set while the version it runs is the last good policy saved on its disk (its heartbeat says
   * `policy: cached`), standing in until Redis gives it the live one: when that was saved. Null
   * while it runs a live policy, or none.
   */
  readonly cachedPolicy: { readonly savedAtMs: number | null } | null;
}

export interface HeartbeatsRead {
  readonly published: PublishedVersion | null;
  /** Most recent heartbeat first; an enforcer whose hash expired is not listed. */
  readonly heartbeats: readonly EnforcerHeartbeat[];
}

function numberOrNull(raw: string | null | undefined): number | null {
  if (raw === undefined || raw === null || raw === "") return null;
  const value = Number(raw);
  return Number.isFinite(value) ? value : null;
}

/** A count the enforcer reports: a whole number >= 0, else 0. */
function countOrZero(raw: string | undefined): number {
  const value = Number(raw);
  return Number.isSafeInteger(value) && value >= 0 ? value : 0;
}

function textOrNull(raw: string | undefined): string | null {
  return raw === undefined || raw === "" ? null : raw;
}

function listOf(raw: string | undefined): string[] {
  return raw === undefined || raw === "" ? [] : raw.split(",");
}

/** One change of Redis primary an enforcer saw (written by its `redis-topology.ts`). */
export interface RedisFailoverRecord {
  readonly atMs: number;
  readonly from: string;
  readonly to: string;
  readonly enforcerId: string;
}

const ZFailoverRecord = z.object({
  atMs: z.number().finite(),
  from: z.string().max(10_000),
  to: z.string().max(10_000),
  enforcerId: z.string().max(200),
});

/**
 * The failovers the enforcers recorded from `fromMs` on, oldest first, merged: records of the
 * same change (the same new primary) within `mergeWithinMs` of the first are one failover, at the
 * earliest time any enforcer saw it. Unreadable members are skipped.
 */
export async function readRedisFailovers(
  redis: { zrangebyscore(key: string, min: number, max: string): Promise<string[]> },
  prefix: string,
  fromMs: number,
  mergeWithinMs = 60_000,
): Promise<RedisFailoverRecord[]> {
  const members = await redis.zrangebyscore(
    enforcerRedisNames(prefix).redisFailovers,
    fromMs,
    "+inf",
  );
  const merged: RedisFailoverRecord[] = [];
  for (const member of members) {
    let parsed: RedisFailoverRecord;
    try {
      parsed = ZFailoverRecord.parse(JSON.parse(member));
    } catch {
      continue;
    }
    const same = merged.find(
      (event) => event.to === parsed.to && parsed.atMs - event.atMs <= mergeWithinMs,
    );
    if (same === undefined) merged.push(parsed);
  }
  return merged;
}

/**
 * The published version and the heartbeats of the (at most `maxEnforcers`) enforcers that beat
 * most recently.
 */
export async function readEnforcerHeartbeats(
  redis: Pick<ReportReadingRedis, "zrevrange" | "hmget" | "hgetall">,
  prefix: string,
  maxEnforcers: number,
): Promise<HeartbeatsRead> {
  const names = enforcerRedisNames(prefix);
  const policy = policyRedisNames(prefix);
  const [ids, current] = await Promise.all([
    redis.zrevrange(names.enforcers, 0, maxEnforcers - 1),
    redis.hmget(policy.head, "version", "publishedAt"),
  ]);
  const publishedVersion = numberOrNull(current[0]);
  const published: PublishedVersion | null =
    publishedVersion === null
      ? null
      : { version: publishedVersion, publishedAtMs: numberOrNull(current[1]) };
  const hashes = await Promise.all(ids.map((id) => redis.hgetall(names.enforcer(id))));
  const heartbeats: EnforcerHeartbeat[] = [];
  ids.forEach((id, index) => {
    const fields = hashes[index];
    // An expired hash is an enforcer that stopped beating: gone, whatever the set still says.
    const heartbeatAtMs = numberOrNull(fields?.heartbeatAt);
    if (fields === undefined || heartbeatAtMs === null) return;
    heartbeats.push({
      id,
      host: fields.host ?? "",
      pid: numberOrNull(fields.pid),
      startedAtMs: numberOrNull(fields.startedAt),
      heartbeatAtMs,
      version: numberOrNull(fields.version),
      appliedAtMs: numberOrNull(fields.appliedAt),
      appliedVia: textOrNull(fields.appliedVia),
      breakerState: textOrNull(fields.breakerState),
      snapshotErrors: numberOrNull(fields.snapshotErrors) ?? 0,
      lastSnapshotError: textOrNull(fields.lastSnapshotError),
      decisionsWithoutStore: {
        storeError: countOrZero(fields.degradedStoreError),
        timeout: countOrZero(fields.degradedTimeout),
        circuitOpen: countOrZero(fields.degradedCircuitOpen),
      },
      slowStoreDecisions: countOrZero(fields.slowStoreDecisions),
      eventLoopDelayP99Ms: numberOrNull(fields.eventLoopDelayP99Ms),
      eventLoopDelayMaxMs: numberOrNull(fields.eventLoopDelayMaxMs),
      redisTopology:
        textOrNull(fields.redisMode) === null
          ? null
          : {
              mode: fields.redisMode ?? "",
              primaries: listOf(fields.redisPrimaries),
              replicas: listOf(fields.redisReplicas),
              sentinelName: textOrNull(fields.redisSentinelName),
              failoversSeen: countOrZero(fields.redisFailoversSeen),
            },
      cachedPolicy:
        fields.policy === "cached" ? { savedAtMs: numberOrNull(fields.policyCachedAt) } : null,
      noPolicy:
        fields.policy === "applied" ||
        fields.policy === "cached" ||
        (fields.policy === undefined && fields.version !== "")
          ? null
          : {
              sinceMs: numberOrNull(fields.noPolicySince) ?? numberOrNull(fields.startedAt),
              action: fields.noPolicyAction === "reject" ? "reject" : "admit",
              decisions: countOrZero(fields.noPolicyDecisions),
            },
    });
  });
  return { published, heartbeats };
}

/**
 * Rejections of a customer by one limit that an enforcer recorded as one entry: `count` of them
 * from `firstAtMs` to `atMs` (within a second; see the enforcer's `recent-rejections.ts`).
 */
export interface RecentRejection {
  readonly atMs: number;
  readonly firstAtMs: number;
  readonly count: number;
  readonly scope: string;
  readonly endpointClass: string | null;
  readonly enforcerId: string | null;
}

/** An entry as stored; one from a release before counts stands for one rejection at `atMs`. */
const ZStoredRejection = z
  .object({
    atMs: z.number().int().nonnegative(),
    firstAtMs: z.number().int().nonnegative().optional(),
    count: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).default(1),
    scope: z.string().max(500),
    endpointClass: z.string().max(100).nullable(),
    enforcerId: z.string().max(200).nullable().default(null),
  })
  .transform(
    (entry): RecentRejection => ({
      atMs: entry.atMs,
      firstAtMs: Math.min(entry.firstAtMs ?? entry.atMs, entry.atMs),
      count: entry.count,
      scope: entry.scope,
      endpointClass: entry.endpointClass,
      enforcerId: entry.enforcerId,
    }),
  );

/**
 * A customer's recent rejections as the enforcers flushed them (`rejections:<customerId>`: newest
 * first, capped, expiring), at most `limit`, newest first. Entries that do not parse are skipped:
 * the list is a diagnostic, not a record.
 */
export async function readRecentRejections(
  redis: Pick<ReportReadingRedis, "lrange">,
  prefix: string,
  customerId: string,
  limit: number,
): Promise<RecentRejection[]> {
  const raw = await redis.lrange(enforcerRedisNames(prefix).rejections(customerId), 0, limit - 1);
  const entries: RecentRejection[] = [];
  for (const text of raw) {
    try {
      const parsed = ZStoredRejection.safeParse(JSON.parse(text));
      if (parsed.success) entries.push(parsed.data);
    } catch {
      // Not JSON: skipped (see above).
    }
  }
  // Several enforcers push to one list: keep it newest first whatever the flush order.
  return entries.sort((a, b) => b.atMs - a.atMs);
}
