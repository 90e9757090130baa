/**
 * A customer's recent rejections as the enforcers flushed them (`rejections:<customerId>`: newest
 * first, capped, expiring after `rejectionsTtlMs`, one hour by default). Entries that do not parse
 * are skipped: the list is a diagnostic, not a record.
 */
import { z } from "zod";
import { getOpsRedisDeps, type OpsRedisDeps, opsRedisNames } from "./ops-redis";

export interface CustomerRejectionEntry {
  readonly atMs: number;
  readonly scope: string;
  readonly endpointClass: string | null;
  readonly enforcerId: string | null;
}

const ZStoredRejection = z.object({
  atMs: z.number().int().nonnegative(),
  scope: z.string().max(500),
  endpointClass: z.string().max(100).nullable(),
  enforcerId: z.string().max(200).nullable().default(null),
});

/** Newest first, at most `limit`. */
export async function readCustomerRejections(
  customerId: string,
  limit = 50,
  deps: OpsRedisDeps = getOpsRedisDeps(),
): Promise<CustomerRejectionEntry[]> {
  const raw = await deps.redis.lrange(opsRedisNames(deps).rejections(customerId), 0, limit - 1);
  const entries: CustomerRejectionEntry[] = [];
  for (const text of raw) {
    try {
      const parsed = ZStoredRejection.safeParse(JSON.parse(text));
      if (parsed.success) entries.push(parsed.data);
    } catch {
      // Not JSON: skipped (see the header).
    }
  }
  // Several enforcers push to one list: keep it newest first whatever the flush order.
  return entries.sort((a, b) => b.atMs - a.atMs);
}
