/**
 * A change request as stored and shown: the change (one of the policy edits that can need a
 * second person, in its service's own options), its diff, preview and backtest as they stood,
 * and its decision.
 */
import { z } from "zod";
import type { Prisma } from "@/lib/generated/prisma/client";
import type { AuditAction, AuditEntityType } from "../audit/audit-actions";
import { ZPromoteCandidateOptions } from "../candidate/promote-candidate";
import { ZDeleteEndpointClassOptions } from "../endpoint-class/delete-endpoint-class";
import { ZUpdateEndpointClassOptions } from "../endpoint-class/update-endpoint-class";
import { ZUpdatePolicySettingsOptions } from "../settings/update-policy-settings";
import { ZStartStagedChangeOptions } from "../staged-change/start-staged-change";
import { isoOf, parseStored } from "../stored";
import { ZDeleteTierOptions } from "../tier/delete-tier";
import { ZUpdateTierOptions } from "../tier/update-tier";

export const CHANGE_REQUEST_STATUSES = [
  "pending",
  "approved",
  "rejected",
  "withdrawn",
  "expired",
] as const;
export type ChangeRequestStatus = (typeof CHANGE_REQUEST_STATUSES)[number];

export const ZChangeRequestId = z
  .string({ error: "id must be text" })
  .regex(/^cr_[0-9a-f]{16}$/, { error: "id must be cr_ and 16 hex characters" });

/**
 * The change to request: `kind` names the service, the rest are its options (with the
 * `expectedVersion` of the entity as the author read it). Each is checked again by the
 * service's own schema, cross-field rules included.
 */
export const ZRequestedChange = z.discriminatedUnion(
  "kind",
  [
    z.strictObject({ kind: z.literal("tier.update"), ...ZUpdateTierOptions.shape }),
    z.strictObject({ kind: z.literal("tier.delete"), ...ZDeleteTierOptions.shape }),
    z.strictObject({
      kind: z.literal("endpoint-class.update"),
      ...ZUpdateEndpointClassOptions.shape,
    }),
    z.strictObject({
      kind: z.literal("endpoint-class.delete"),
      ...ZDeleteEndpointClassOptions.shape,
    }),
    z.strictObject({
      kind: z.literal("settings.update"),
      ...ZUpdatePolicySettingsOptions.shape,
    }),
    z.strictObject({
      kind: z.literal("candidate.promote"),
      ...ZPromoteCandidateOptions.shape,
    }),
    z.strictObject({
      /** Started as a staged change once approved; checked again by its own schema. */
      kind: z.literal("staged-change.start"),
      ...ZStartStagedChangeOptions.shape,
    }),
    z.strictObject({
      kind: z.literal("policy.import"),
      /** A whole policy document, validated as an import validates it. */
      document: z.unknown(),
    }),
  ],
  {
    error:
      "kind must be one of: tier.update, tier.delete, endpoint-class.update, endpoint-class.delete, settings.update, candidate.promote, staged-change.start, policy.import",
  },
);
export type TRequestedChange = z.output<typeof ZRequestedChange>;
export type RequestedChangeKind = TRequestedChange["kind"];

/** The audit action, entity type and entity id the change will be recorded under. */
export function targetOf(change: TRequestedChange): {
  readonly action: AuditAction;
  readonly entityType: AuditEntityType;
  readonly entityId: string;
} {
  switch (change.kind) {
    case "tier.update":
    case "tier.delete":
      return { action: change.kind, entityType: "tier", entityId: change.name };
    case "endpoint-class.update":
    case "endpoint-class.delete":
      return { action: change.kind, entityType: "endpoint-class", entityId: change.name };
    case "settings.update":
      return { action: change.kind, entityType: "settings", entityId: "settings" };
    case "candidate.promote":
      // Recorded on the rule it replaces; the request names the candidate.
      return { action: change.kind, entityType: "candidate", entityId: change.id };
    case "staged-change.start":
      // Its id may be chosen when it starts; the gate matches it by action, not by id.
      return {
        action: change.kind,
        entityType: "staged-change",
        entityId: change.candidateId ?? change.id ?? "new",
      };
    case "policy.import":
      return { action: change.kind, entityType: "policy", entityId: "policy" };
  }
}

export const changeRequestSelect = {
  id: true,
  status: true,
  action: true,
  entityType: true,
  entityId: true,
  change: true,
  diff: true,
  preview: true,
  backtest: true,
  gatedBy: true,
  reason: true,
  authorType: true,
  authorId: true,
  authorName: true,
  authorOperatorId: true,
  basePolicyVersion: true,
  previewedAt: true,
  expiresAt: true,
  decidedAt: true,
  deciderId: true,
  deciderName: true,
  decisionNote: true,
  requestAuditEntryId: true,
  decisionAuditEntryId: true,
  appliedAuditEntryId: true,
  appliedPolicyVersion: true,
  version: true,
  createdAt: true,
  updatedAt: true,
} satisfies Prisma.ChangeRequestSelect;

type ChangeRequestRow = Prisma.ChangeRequestGetPayload<{ select: typeof changeRequestSelect }>;

export interface ChangeRequestRecord {
  readonly id: string;
  /** "expired" also for a pending request past its expiry that the worker has not yet swept. */
  readonly status: ChangeRequestStatus;
  readonly action: string;
  readonly entityType: string;
  readonly entityId: string;
  readonly change: TRequestedChange;
  readonly diff: { readonly before: unknown; readonly after: unknown };
  readonly preview: unknown;
  readonly backtest: unknown;
  readonly gatedBy: string[];
  readonly reason: string;
  readonly author: {
    readonly type: string;
    readonly id: string | null;
    readonly name: string;
    /** A token's creator, who may not approve its requests either. */
    readonly operatorId: string | null;
  };
  readonly basePolicyVersion: number | null;
  /** True while pending and the policy has a newer version than the preview's. */
  readonly isStale: boolean;
  readonly previewedAt: string;
  readonly expiresAt: string;
  readonly decision: {
    readonly at: string;
    readonly byId: string | null;
    readonly byName: string | null;
    readonly note: string | null;
  } | null;
  /** The three linked audit entries (decimal ids). */
  readonly auditEntries: {
    readonly request: string | null;
    readonly decision: string | null;
    readonly applied: string | null;
  };
  readonly appliedPolicyVersion: number | null;
  readonly version: number;
  readonly createdAt: string;
  readonly updatedAt: string;
}

const ZStoredColumns = z.object({
  change: ZRequestedChange,
  diff: z.object({ before: z.unknown(), after: z.unknown() }),
  gatedBy: z.array(z.string()),
  status: z.enum(CHANGE_REQUEST_STATUSES),
});

export function toChangeRequestRecord(
  row: ChangeRequestRow,
  latestPolicyVersion: number | null,
  nowMs: number,
): ChangeRequestRecord {
  const stored = parseStored(
    ZStoredColumns,
    { change: row.change, diff: row.diff, gatedBy: row.gatedBy, status: row.status },
    `change request ${row.id}`,
  );
  const isPending = stored.status === "pending";
  const isLapsed = isPending && row.expiresAt.getTime() <= nowMs;
  return {
    id: row.id,
    status: isLapsed ? "expired" : stored.status,
    action: row.action,
    entityType: row.entityType,
    entityId: row.entityId,
    change: stored.change,
    diff: stored.diff,
    preview: row.preview,
    backtest: row.backtest,
    gatedBy: stored.gatedBy,
    reason: row.reason,
    author: {
      type: row.authorType,
      id: row.authorId,
      name: row.authorName,
      operatorId: row.authorOperatorId,
    },
    basePolicyVersion: row.basePolicyVersion,
    isStale: isPending && !isLapsed && row.basePolicyVersion !== latestPolicyVersion,
    previewedAt: isoOf(row.previewedAt),
    expiresAt: isoOf(row.expiresAt),
    decision:
      row.decidedAt === null
        ? null
        : {
            at: isoOf(row.decidedAt),
            byId: row.deciderId,
            byName: row.deciderName,
            note: row.decisionNote,
          },
    auditEntries: {
      request: row.requestAuditEntryId?.toString() ?? null,
      decision: row.decisionAuditEntryId?.toString() ?? null,
      applied: row.appliedAuditEntryId?.toString() ?? null,
    },
    appliedPolicyVersion: row.appliedPolicyVersion,
    version: row.version,
    createdAt: isoOf(row.createdAt),
    updatedAt: isoOf(row.updatedAt),
  };
}
