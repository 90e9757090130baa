import type { ReadDeps } from "../deps";
import {
  type AuditPage,
  type ListAuditEntriesOptions,
  listAuditEntries,
} from "./list-audit-entries";

/**
 * One customer's history, newest first: every audited change that concerned it (registry edits,
 * overrides, incidents raised, extended, reverted and expired). Served by the customer index.
 */
export async function customerHistory(
  customerId: string,
  options: Pick<ListAuditEntriesOptions, "cursor" | "limit"> = {},
  deps: ReadDeps,
): Promise<AuditPage> {
  return listAuditEntries({ ...options, customerId }, deps);
}
