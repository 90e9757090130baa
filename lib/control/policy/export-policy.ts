import { canonicalPolicy } from "@limitplane/enforcer/policy";
import { Prisma } from "@/lib/generated/prisma/client";
import { getControlDeps, type ReadDeps } from "../control-deps";
import { noPolicyYet } from "./run-policy-change";
import { parseStoredPolicy, readStoredPolicy } from "./stored-policy";

export interface PolicyExport {
  /**
   * The canonical policy document (@limitplane/enforcer/policy `canonicalPolicy`): two exports of the same policy
   * are byte-identical, and a diff between two exports shows only what changed. Expired and
   * reverted incidents are left out: they are history, in the audit log.
   */
  readonly document: string;
  /** The latest policy version when it was read; null before the first. */
  readonly policyVersion: number | null;
}

export interface ExportPolicyOptions {
  /** Incidents that have expired by this instant are left out. @default Date.now() */
  readonly nowMs?: number;
}

/**
 * The current policy as a document, read in one repeatable-read transaction so it is one
 * consistent state even while changes are being made. Includes the whole customer registry.
 */
export async function exportPolicy(
  options: ExportPolicyOptions = {},
  deps: ReadDeps = getControlDeps(),
): Promise<PolicyExport> {
  const nowMs = options.nowMs ?? Date.now();
  return deps.db.$transaction(
    async (tx) => {
      const stored = await readStoredPolicy(tx, { nowMs, customers: "all" });
      if (stored === null) throw noPolicyYet();
      const latest = await tx.policyVersion.findFirst({
        orderBy: { version: "desc" },
        select: { version: true },
      });
      return {
        document: canonicalPolicy(parseStoredPolicy(stored)),
        policyVersion: latest?.version ?? null,
      };
    },
    { isolationLevel: Prisma.TransactionIsolationLevel.RepeatableRead, timeout: 60_000 },
  );
}
