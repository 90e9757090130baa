/**
 * The summary of a policy document (policy-summary.ts says what a summary holds). Pure but for
 * Node's SHA-256, so that the import's child process summarizes a large document off the server's
 * event loop (prepare-import.ts).
 */
import { createHash } from "node:crypto";
import { canonicalPolicy, type TPolicyDocument } from "@limitplane/enforcer/policy";
import type { PolicySummary } from "./policy-summary";

export function summarizeDocument(doc: TPolicyDocument): PolicySummary {
  return {
    tiers: doc.tiers.map((tier) => tier.name).sort(),
    endpointClasses: doc.endpointClasses.map((endpointClass) => endpointClass.name).sort(),
    dryRunCandidates: doc.dryRunCandidates.map((candidate) => candidate.id).sort(),
    customers: doc.customers.length,
    customerOverrides: doc.customerOverrides.length,
    incidentOverrides: doc.incidentOverrides.length,
    exportChecksum: createHash("sha256").update(canonicalPolicy(doc)).digest("hex"),
  };
}
