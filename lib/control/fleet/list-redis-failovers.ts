/**
 * The Redis failovers the enforcers saw (each change of primary, recorded by the enforcer's
 * `redis-topology.ts`), merged across enforcers: what the charts mark.
 */
import { type RedisFailoverRecord, readRedisFailovers } from "@limitplane/enforcer/publication";
import type { FleetDeps } from "../deps";

export async function listRedisFailovers(
  options: { readonly fromMs: number },
  deps: FleetDeps,
): Promise<RedisFailoverRecord[]> {
  return readRedisFailovers(deps.redis, deps.prefix, options.fromMs);
}
