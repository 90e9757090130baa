/**
 * A customer's recent rejections as the enforcers flushed them, read on the console's one read
 * connection (`readRecentRejections` in the package's publication protocol does the reading).
 */
import "server-only";
import { type RecentRejection, readRecentRejections } from "@limitplane/enforcer/publication";
import { opsRedisDeps } from "@/lib/server/composition";
import type { OpsRedisDeps } from "./ops-redis";

export type CustomerRejectionEntry = RecentRejection;

/** Newest first, at most `limit`. */
export function readCustomerRejections(
  customerId: string,
  limit = 50,
  deps: OpsRedisDeps = opsRedisDeps(),
): Promise<CustomerRejectionEntry[]> {
  return readRecentRejections(deps.redis, deps.prefix, customerId, limit);
}
