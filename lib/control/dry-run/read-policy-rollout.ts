/**
 * How far a policy version has travelled: of the enforcers that sent a heartbeat recently, how
 * many run that version or a later one. Read from the heartbeats the enforcers write to Redis
 * (`packages/enforcer/src/enforcer/reporters.ts`, keys in `packages/enforcer/src/publication/redis-keys.ts`), so "promoted" can be
 * followed by "enforced by 2 of 2 gateways" rather than a promise.
 */

import type { FleetDeps } from "../deps";
import { listEnforcers } from "../fleet/list-enforcers";

export interface ReadPolicyRolloutOptions {
  readonly version: number;
  /** Wall clock, ms. */
  readonly nowMs: number;
  /** An enforcer counts as live if its last heartbeat is this recent. @default 10_000 (the heartbeat hash lives 10 s by default) */
  readonly liveWithinMs?: number;
}

export interface PolicyRollout {
  readonly version: number;
  /** Enforcers with a recent heartbeat. */
  readonly liveEnforcers: number;
  /** Of those, the ones running `version` or later. */
  readonly atVersion: number;
  /** Those still on an older version (or none), by id. */
  readonly behind: readonly { readonly enforcerId: string; readonly version: number | null }[];
}

/** The rollout of `version`, or null when Redis cannot be read. */
export async function readPolicyRollout(
  options: ReadPolicyRolloutOptions,
  deps: FleetDeps,
): Promise<PolicyRollout | null> {
  try {
    const fleet = await listEnforcers(
      { ...deps, clock: { nowMs: () => options.nowMs } },
      { liveWithinMs: options.liveWithinMs ?? 10_000 },
    );
    const behind = fleet.enforcers
      .filter((enforcer) => enforcer.version === null || enforcer.version < options.version)
      .map((enforcer) => ({ enforcerId: enforcer.id, version: enforcer.version }));
    return {
      version: options.version,
      liveEnforcers: fleet.enforcers.length,
      atVersion: fleet.enforcers.length - behind.length,
      behind: behind.sort((a, b) => (a.enforcerId < b.enforcerId ? -1 : 1)),
    };
  } catch (error: unknown) {
    console.warn("policy rollout: enforcer heartbeats unavailable", error);
    return null;
  }
}
