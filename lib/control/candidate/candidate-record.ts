import { type TDryRunCandidate, ZDryRunCandidate } from "@limitplane/enforcer/policy";
import type { Prisma } from "@/lib/generated/prisma/client";
import { AppError, notFound } from "../errors";
import type { Db } from "../stored";
import { auditView, isoOf, parseStored } from "../stored";
import type { VersionedEntity } from "../versioned-write";

/** A dry-run candidate's fields in the policy document: what `readStoredPolicy` reads. */
export const candidateDocumentSelect = {
  id: true,
  target: true,
  limit: true,
  sliceBasisPoints: true,
} satisfies Prisma.DryRunCandidateSelect;

type CandidateDocumentRow = Prisma.DryRunCandidateGetPayload<{
  select: typeof candidateDocumentSelect;
}>;

/** A candidate row as the policy document holds it: a slice only while it is a staged change. */
export function candidateDocumentOf(row: CandidateDocumentRow): Record<string, unknown> {
  const { sliceBasisPoints, ...candidate } = row;
  return sliceBasisPoints === null ? candidate : { ...candidate, sliceBasisPoints };
}

export const candidateSelect = {
  ...candidateDocumentSelect,
  createdBy: true,
  version: true,
  createdAt: true,
  updatedAt: true,
} satisfies Prisma.DryRunCandidateSelect;

type CandidateRow = Prisma.DryRunCandidateGetPayload<{ select: typeof candidateSelect }>;

export type CandidateRecord = TDryRunCandidate & {
  /** Display name of the actor who created it. */
  readonly createdBy: string;
  readonly version: number;
  readonly createdAt: string;
  readonly updatedAt: string;
};

export function candidateLabel(id: string): string {
  return `dry-run candidate "${id}"`;
}

export function toCandidateRecord(row: CandidateRow): CandidateRecord {
  const candidate = parseStored(
    ZDryRunCandidate,
    candidateDocumentOf({
      id: row.id,
      target: row.target,
      limit: row.limit,
      sliceBasisPoints: row.sliceBasisPoints,
    }),
    candidateLabel(row.id),
  );
  return {
    ...candidate,
    createdBy: row.createdBy,
    version: row.version,
    createdAt: isoOf(row.createdAt),
    updatedAt: isoOf(row.updatedAt),
  };
}

/** Refuses to change a candidate that carries a running staged change by the candidate's verbs. */
export function assertNotStaged(candidate: CandidateRecord): void {
  if (candidate.sliceBasisPoints === undefined) return;
  throw new AppError(
    "CONFLICT",
    `${candidateLabel(candidate.id)} is a staged change at ${candidate.sliceBasisPoints / 100} %; advance, pause or abort the staged change instead.`,
  );
}

export async function findCandidate(db: Db, id: string): Promise<CandidateRecord> {
  const row = await db.dryRunCandidate.findUnique({ where: { id }, select: candidateSelect });
  if (row === null) throw notFound("Dry-run candidate", id);
  return toCandidateRecord(row);
}

/** A dry-run candidate as `versionedWrite` reads, checks and records it. */
export function candidateEntity(id: string): VersionedEntity<CandidateRecord> {
  return {
    find: (tx) => findCandidate(tx, id),
    entityType: "candidate",
    entityId: id,
    label: candidateLabel(id),
    view: auditView,
  };
}
