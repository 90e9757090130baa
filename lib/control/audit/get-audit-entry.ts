import type { ReadDeps } from "../deps";
import { AppError } from "../errors";
import { type AuditEntryRecord, auditSelect, toAuditEntryRecord } from "./list-audit-entries";

const DECIMAL_ID = /^[1-9][0-9]{0,17}$/;

/**
 * One audit entry by id (what a chart marker links to). An id that is not a bigint in decimal is
 * NOT_FOUND like a missing one: there is no entry by that name either way.
 */
export async function getAuditEntry(id: string, deps: ReadDeps): Promise<AuditEntryRecord> {
  const row = DECIMAL_ID.test(id)
    ? await deps.db.auditEntry.findUnique({ where: { id: BigInt(id) }, select: auditSelect })
    : null;
  if (row === null) throw new AppError("NOT_FOUND", `There is no audit entry ${id}.`);
  return toAuditEntryRecord(row);
}
