import { type TIncidentOverride, ZIncidentOverride } from "@limitplane/enforcer/policy";
import type { Prisma } from "@/lib/generated/prisma/client";
import { notFound } from "../errors";
import type { Db } from "../stored";
import { auditView, isoOf, jsonColumn, parseStored } from "../stored";
import type { VersionedEntity } from "../versioned-write";

/** An incident override's fields in the policy document: what `readStoredPolicy` reads. */
export const incidentDocumentSelect = {
  id: true,
  customerId: true,
  endpointClass: true,
  factor: true,
  limit: true,
  startsAt: true,
  expiresAt: true,
  owner: true,
  reason: true,
  ticketUrl: true,
} satisfies Prisma.IncidentOverrideSelect;

export const incidentSelect = {
  ...incidentDocumentSelect,
  createdBy: true,
  revokedAt: true,
  revokedBy: true,
  expiryRecordedAt: true,
  version: true,
  createdAt: true,
  updatedAt: true,
} satisfies Prisma.IncidentOverrideSelect;

type IncidentRow = Prisma.IncidentOverrideGetPayload<{ select: typeof incidentSelect }>;

/**
 * Where an incident override stands at a given instant:
 * `upcoming` (before `startsAt`), `active`, `expired` (at or after `expiresAt`), `reverted`.
 */
export type IncidentState = "upcoming" | "active" | "expired" | "reverted";

export type IncidentRecord = TIncidentOverride & {
  /** Display name of the actor who raised it. */
  readonly createdBy: string;
  readonly revokedAt: string | null;
  readonly revokedBy: string | null;
  readonly expiryRecordedAt: string | null;
  readonly version: number;
  readonly createdAt: string;
  readonly updatedAt: string;
};

export function incidentLabel(id: string): string {
  return `incident "${id}"`;
}

export function incidentState(
  incident: Pick<IncidentRecord, "startsAt" | "expiresAt" | "revokedAt">,
  nowMs: number,
): IncidentState {
  if (incident.revokedAt !== null) return "reverted";
  if (Date.parse(incident.expiresAt) <= nowMs) return "expired";
  return Date.parse(incident.startsAt) > nowMs ? "upcoming" : "active";
}

export function toIncidentRecord(row: IncidentRow): IncidentRecord {
  const incident = parseStored(
    ZIncidentOverride,
    {
      id: row.id,
      customerId: row.customerId,
      endpointClass: row.endpointClass,
      factor: row.factor,
      limit: row.limit,
      startsAt: isoOf(row.startsAt),
      expiresAt: isoOf(row.expiresAt),
      owner: row.owner,
      reason: row.reason,
      ticketUrl: row.ticketUrl,
    },
    incidentLabel(row.id),
  );
  return {
    ...incident,
    createdBy: row.createdBy,
    revokedAt: row.revokedAt === null ? null : isoOf(row.revokedAt),
    revokedBy: row.revokedBy,
    expiryRecordedAt: row.expiryRecordedAt === null ? null : isoOf(row.expiryRecordedAt),
    version: row.version,
    createdAt: isoOf(row.createdAt),
    updatedAt: isoOf(row.updatedAt),
  };
}

/** The columns of an incident override's definition. */
export function incidentData(incident: TIncidentOverride) {
  return {
    customerId: incident.customerId,
    endpointClass: incident.endpointClass,
    factor: incident.factor,
    limit: jsonColumn(incident.limit),
    startsAt: new Date(incident.startsAt),
    expiresAt: new Date(incident.expiresAt),
    owner: incident.owner,
    reason: incident.reason,
    ticketUrl: incident.ticketUrl,
  };
}

export async function findIncident(db: Db, id: string): Promise<IncidentRecord> {
  const row = await db.incidentOverride.findUnique({ where: { id }, select: incidentSelect });
  if (row === null) throw notFound("Incident override", id);
  return toIncidentRecord(row);
}

/** An incident override as `versionedWrite` reads, checks and records it. */
export function incidentEntity(id: string): VersionedEntity<IncidentRecord> {
  return {
    find: (tx) => findIncident(tx, id),
    entityType: "incident",
    entityId: id,
    customerId: (incident) => incident.customerId,
    label: incidentLabel(id),
    view: auditView,
  };
}
