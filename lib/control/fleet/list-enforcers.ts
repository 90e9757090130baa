/**
 * The enforcer fleet as its heartbeats describe it (lib/enforcer/README.md, "What an enforcer
 * writes to Redis"): every enforcer whose `enforcer:<id>` hash has not expired, with the policy
 * version it runs and how far that is behind the version published in `policy:current`.
 */
import { enforcerRedisNames } from "@/lib/enforcer/redis-keys";
import { policyRedisNames } from "@/lib/publication/keys";
import { type FleetDeps, getFleetDeps } from "./fleet-deps";

export interface PublishedVersion {
  readonly version: number;
  /** When it reached Redis (Redis's clock), epoch ms; null if not recorded. */
  readonly publishedAtMs: number | null;
}

export interface EnforcerRecord {
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
  /** Published versions it has not applied: 0 when current; null when it runs none or none is published. */
  readonly versionsBehind: number | null;
  /**
   * How long it has lagged: while behind, since the current version was published; when current,
   * how long applying it took after publication. Null when unknown.
   */
  readonly lagMs: number | null;
  readonly breakerState: string | null;
  readonly snapshotErrors: number;
  readonly lastSnapshotError: string | null;
}

export interface Fleet {
  readonly published: PublishedVersion | null;
  /** Most recent heartbeat first. */
  readonly enforcers: readonly EnforcerRecord[];
}

/** Most enforcers listed; the sorted set holds every id seen in the last hour. */
const MAX_ENFORCERS = 200;

function numberOrNull(raw: string | null | undefined): number | null {
  if (raw === undefined || raw === null || raw === "") return null;
  const value = Number(raw);
  return Number.isFinite(value) ? value : null;
}

function textOrNull(raw: string | undefined): string | null {
  return raw === undefined || raw === "" ? null : raw;
}

export interface ListEnforcersOptions {
  /**
   * Leave out an enforcer whose last heartbeat is older than this, even while its hash lives on.
   * @default no limit: an enforcer is listed until its heartbeat hash expires (10 s by default)
   */
  readonly liveWithinMs?: number;
}

/**
 * The one reader of the enforcers' heartbeats: the overview's fleet, the incident page's
 * confirmations and a version's rollout all come from here.
 */
export async function listEnforcers(
  deps: FleetDeps = getFleetDeps(),
  options: ListEnforcersOptions = {},
): Promise<Fleet> {
  const names = enforcerRedisNames(deps.prefix);
  const [ids, current] = await Promise.all([
    deps.redis.zrevrange(names.enforcers, 0, MAX_ENFORCERS - 1),
    deps.redis.hmget(policyRedisNames(deps.prefix).current, "version", "publishedAt"),
  ]);
  const publishedVersion = numberOrNull(current[0]);
  const published: PublishedVersion | null =
    publishedVersion === null
      ? null
      : { version: publishedVersion, publishedAtMs: numberOrNull(current[1]) };
  const hashes = await Promise.all(ids.map((id) => deps.redis.hgetall(names.enforcer(id))));
  const nowMs = deps.nowMs();
  const enforcers: EnforcerRecord[] = [];
  ids.forEach((id, index) => {
    const fields = hashes[index];
    // An expired hash is an enforcer that stopped beating: gone, whatever the set still says.
    const heartbeatAtMs = numberOrNull(fields?.heartbeatAt);
    if (fields === undefined || heartbeatAtMs === null) return;
    if (options.liveWithinMs !== undefined && heartbeatAtMs < nowMs - options.liveWithinMs) return;
    const version = numberOrNull(fields.version);
    const appliedAtMs = numberOrNull(fields.appliedAt);
    const versionsBehind =
      version === null || published === null ? null : Math.max(0, published.version - version);
    let lagMs: number | null = null;
    if (published?.publishedAtMs != null && versionsBehind !== null) {
      lagMs =
        versionsBehind > 0
          ? Math.max(0, nowMs - published.publishedAtMs)
          : appliedAtMs === null
            ? null
            : Math.max(0, appliedAtMs - published.publishedAtMs);
    }
    enforcers.push({
      id,
      host: fields.host ?? "",
      pid: numberOrNull(fields.pid),
      startedAtMs: numberOrNull(fields.startedAt),
      heartbeatAtMs,
      version,
      appliedAtMs,
      appliedVia: textOrNull(fields.appliedVia),
      versionsBehind,
      lagMs,
      breakerState: textOrNull(fields.breakerState),
      snapshotErrors: numberOrNull(fields.snapshotErrors) ?? 0,
      lastSnapshotError: textOrNull(fields.lastSnapshotError),
    });
  });
  return { published, enforcers };
}
