import type { ReadDeps } from "../deps";
import { listAuditEntries } from "./list-audit-entries";

/** A change that can move a rejection rate, as a chart marks it. */
export interface RateChange {
  readonly atMs: number;
  readonly auditEntryId: string;
  readonly action: string;
  /** `tier.update free`. */
  readonly label: string;
}

export interface RateChanges {
  readonly changes: readonly RateChange[];
  /** True when the range holds more audit entries than `limit`: only the latest were read. */
  readonly hasMore: boolean;
}

/**
 * The changes since `fromMs` that can move a rejection rate: those enforcers saw (a new policy
 * version) and incident overrides. Registry and account changes are left out. Reads the latest
 * `limit` audit entries of the range, newest first.
 */
export async function listRateChanges(
  options: { readonly fromMs: number; readonly limit: number },
  deps: ReadDeps,
): Promise<RateChanges> {
  const page = await listAuditEntries(
    { from: new Date(options.fromMs).toISOString(), limit: options.limit },
    deps,
  );
  return {
    changes: page.entries
      .filter((entry) => entry.policyVersion !== null || entry.action.startsWith("incident."))
      .map((entry) => ({
        atMs: Date.parse(entry.at),
        auditEntryId: entry.id,
        action: entry.action,
        label: `${entry.action} ${entry.entityId}`,
      })),
    hasMore: page.nextCursor !== null,
  };
}
