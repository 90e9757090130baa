/**
 * The guard a staged change gets when it is started without one of its own (or with only some of
 * its fields): one row, absent until first saved, when the product's defaults apply.
 */
import { z } from "zod";
import type { AuditReceipt } from "../audit/run-audited-change";
import { runAuditedChange } from "../audit/run-audited-change";
import { type ChangeContext, parseChange } from "../change-context";
import type { AuthDeps } from "../deps";
import { lockPolicyChanges } from "../locks";
import { type Db, isoOf } from "../stored";
import { type VersionedEntity, versionedWrite } from "../versioned-write";
import { DEFAULT_STAGED_GUARD, type TStagedGuard, ZStagedGuardOverrides } from "./staged-guard";

export interface StagedGuardSettingsRecord {
  readonly guard: TStagedGuard;
  /** 0 before the settings were first saved. */
  readonly version: number;
  readonly createdAt: string | null;
  readonly updatedAt: string | null;
}

const settingsSelect = {
  marginPercent: true,
  minRequests: true,
  windowMs: true,
  consecutiveWindows: true,
  version: true,
  createdAt: true,
  updatedAt: true,
} as const;

/** The defaults as stored, or the product's (version 0) when never saved. */
export async function findStagedGuardSettings(db: Db): Promise<StagedGuardSettingsRecord> {
  const row = await db.stagedGuardSettings.findUnique({ where: { id: 1 }, select: settingsSelect });
  if (row === null) {
    return { guard: { ...DEFAULT_STAGED_GUARD }, version: 0, createdAt: null, updatedAt: null };
  }
  const { version, createdAt, updatedAt, ...guard } = row;
  return { guard, version, createdAt: isoOf(createdAt), updatedAt: isoOf(updatedAt) };
}

function settingsEntity(): VersionedEntity<StagedGuardSettingsRecord> {
  return {
    find: (tx) => findStagedGuardSettings(tx),
    entityType: "staged-guard-settings",
    entityId: "staged-guard-settings",
    label: "the staged change guard's defaults",
    view: ({ guard, version }) => ({ ...guard, version }),
  };
}

export const ZUpdateStagedGuardSettingsOptions = ZStagedGuardOverrides.extend({
  /** 0 before the settings were first saved. */
  expectedVersion: z
    .number({ error: "expectedVersion is required: the version of the settings you read" })
    .int({ error: "expectedVersion must be a whole number" })
    .min(0, { error: "expectedVersion must be at least 0" })
    .max(2_147_483_647, { error: "expectedVersion is too large" }),
}).refine((options) => Object.keys(options).some((key) => key !== "expectedVersion"), {
  error:
    "give at least one field to change: marginPercent, minRequests, windowMs, consecutiveWindows",
});
export type UpdateStagedGuardSettingsOptions = z.input<typeof ZUpdateStagedGuardSettingsOptions>;

/**
 * Changes the guard defaults that staged changes started from now on get. A running staged
 * change keeps the guard it started with: its figures were judged against it.
 */
export async function updateStagedGuardSettings(
  options: UpdateStagedGuardSettingsOptions,
  context: ChangeContext,
  deps: Pick<AuthDeps, "db" | "clock" | "auditKey">,
): Promise<{ readonly settings: StagedGuardSettingsRecord } & AuditReceipt> {
  const { input, ctx } = parseChange(ZUpdateStagedGuardSettingsOptions, options, context);
  const { expectedVersion, ...change } = input;
  return runAuditedChange(deps, ctx, {
    action: "staged-guard-settings.update",
    entityType: "staged-guard-settings",
    lock: lockPolicyChanges,
    write: versionedWrite(settingsEntity(), expectedVersion, async (tx, current) => {
      const guard = { ...current.guard, ...definedFields(change) };
      const row = await tx.stagedGuardSettings.upsert({
        where: { id: 1 },
        create: { ...guard, id: 1, version: 1 },
        update: { ...guard, version: { increment: 1 } },
        select: settingsSelect,
      });
      const { version, createdAt, updatedAt, ...stored } = row;
      const settings: StagedGuardSettingsRecord = {
        guard: stored,
        version,
        createdAt: isoOf(createdAt),
        updatedAt: isoOf(updatedAt),
      };
      return { after: { ...stored, version }, value: { settings } };
    }),
  });
}

/** The fields given (an absent optional field is `undefined`, which must not overwrite). */
export function definedFields<T extends object>(fields: T): Partial<T> {
  return Object.fromEntries(
    Object.entries(fields).filter(([, value]) => value !== undefined),
  ) as Partial<T>;
}
