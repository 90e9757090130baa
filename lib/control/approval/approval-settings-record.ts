import type { Prisma } from "@/lib/generated/prisma/client";
import type { Db } from "../stored";
import { isoOf } from "../stored";
import type { VersionedEntity } from "../versioned-write";
import { type ApprovalRules, DEFAULT_APPROVAL_RULES } from "./approval-rules";

export const approvalSettingsSelect = {
  isEnabled: true,
  limitDecreasePercent: true,
  isCeilingChangeGated: true,
  isDeletionGated: true,
  importChangedEntries: true,
  requestLifetimeMs: true,
  version: true,
  createdAt: true,
  updatedAt: true,
} satisfies Prisma.ApprovalSettingsSelect;

/** Which changes need a second person, with the row's version (0 before it was first saved). */
export interface ApprovalSettingsRecord extends ApprovalRules {
  readonly version: number;
  readonly createdAt: string | null;
  readonly updatedAt: string | null;
}

/** The settings as stored, or the defaults (version 0) when never saved. */
export async function findApprovalSettings(db: Db): Promise<ApprovalSettingsRecord> {
  const row = await db.approvalSettings.findUnique({
    where: { id: 1 },
    select: approvalSettingsSelect,
  });
  if (row === null) {
    return { ...DEFAULT_APPROVAL_RULES, version: 0, createdAt: null, updatedAt: null };
  }
  return { ...row, createdAt: isoOf(row.createdAt), updatedAt: isoOf(row.updatedAt) };
}

/** The settings as `versionedWrite` reads, checks and records them. */
export function approvalSettingsEntity(): VersionedEntity<ApprovalSettingsRecord> {
  return {
    find: (tx) => findApprovalSettings(tx),
    entityType: "approval-settings",
    entityId: "approval-settings",
    label: "the approval settings",
    view: ({ createdAt: _created, updatedAt: _updated, ...rules }) => rules,
  };
}

/** Enabled operators whose role may approve (roles.ts `change.approve`: admins). */
export async function countEligibleApprovers(db: Db): Promise<number> {
  return db.operator.count({ where: { role: "admin", disabledAt: null } });
}
