/**
 * The enforcer fleet as its heartbeats describe it (packages/enforcer/README.md, "What an enforcer
 * writes to Redis"): every enforcer whose `enforcer:<id>` hash has not expired, with the policy
 * version it runs and how far that is behind the version published in the policy head.
 */
import {
  type EnforcerHeartbeat,
  type PublishedVersion,
  readEnforcerHeartbeats,
} from "@limitplane/enforcer/publication";
import type { FleetDeps } from "../deps";

export interface EnforcerRecord extends EnforcerHeartbeat {
  /** Published versions it has not applied: 0 when current; null when it runs none or none is published. */
  readonly versionsBehind: number | null;
  /**
   * How long it has lagged: while behind, since the current version was published; when current,
   * how long applying it took after publication. Null when unknown.
   */
  readonly lagMs: number | null;
}

export interface Fleet {
  readonly published: PublishedVersion | null;
  /** Most recent heartbeat first. */
  readonly enforcers: readonly EnforcerRecord[];
}

/** Most enforcers listed; the sorted set holds every id seen in the last hour. */
const MAX_ENFORCERS = 200;

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
  deps: FleetDeps,
  options: ListEnforcersOptions = {},
): Promise<Fleet> {
  const { published, heartbeats } = await readEnforcerHeartbeats(
    deps.redis,
    deps.prefix,
    MAX_ENFORCERS,
  );
  const nowMs = deps.clock.nowMs();
  const enforcers: EnforcerRecord[] = [];
  for (const heartbeat of heartbeats) {
    const { version, appliedAtMs, heartbeatAtMs } = heartbeat;
    if (options.liveWithinMs !== undefined && heartbeatAtMs < nowMs - options.liveWithinMs)
      continue;
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
    enforcers.push({ ...heartbeat, versionsBehind, lagMs });
  }
  return { published, enforcers };
}
