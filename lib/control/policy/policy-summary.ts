/**
 * A short description of a whole policy, for the audit entry of an import (its before and after):
 * the names of the few-in-number entities, counts of the many, and a checksum of the canonical
 * export so two summaries of the same policy compare equal. A document's: summarize-document.ts.
 */
import type { Db } from "../stored";
import { currentIncidentWhere } from "./stored-policy";

export interface PolicySummary {
  readonly tiers: readonly string[];
  readonly endpointClasses: readonly string[];
  readonly dryRunCandidates: readonly string[];
  readonly customers: number;
  readonly customerOverrides: number;
  readonly incidentOverrides: number;
  /** SHA-256 of the canonical export, when it was computed (not for the policy replaced). */
  readonly exportChecksum?: string;
}

/** The stored policy's summary, by counting (the registry is never loaded for it). */
export async function summarizeStoredPolicy(db: Db, nowMs: number): Promise<PolicySummary> {
  const [tiers, endpointClasses, candidates, customers, customerOverrides, incidentOverrides] =
    await Promise.all([
      db.tier.findMany({ orderBy: { name: "asc" }, select: { name: true } }),
      db.endpointClass.findMany({ orderBy: { name: "asc" }, select: { name: true } }),
      db.dryRunCandidate.findMany({ orderBy: { id: "asc" }, select: { id: true } }),
      db.customer.count(),
      db.customerOverride.count(),
      db.incidentOverride.count({ where: currentIncidentWhere(nowMs) }),
    ]);
  return {
    tiers: tiers.map((tier) => tier.name),
    endpointClasses: endpointClasses.map((endpointClass) => endpointClass.name),
    dryRunCandidates: candidates.map((candidate) => candidate.id),
    customers,
    customerOverrides,
    incidentOverrides,
  };
}
