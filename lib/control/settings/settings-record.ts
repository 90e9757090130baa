import {
  type TCeilings,
  type TGuardrails,
  ZCeilings,
  ZGuardrails,
} from "@limitplane/enforcer/policy";
import { z } from "zod";
import type { Prisma } from "@/lib/generated/prisma/client";
import { noPolicyYet } from "../policy/run-policy-change";
import type { Db } from "../stored";
import { auditView, isoOf, parseStored } from "../stored";
import type { VersionedEntity } from "../versioned-write";

export const settingsSelect = {
  defaultTier: true,
  defaultEndpointClass: true,
  ceilings: true,
  guardrails: true,
  version: true,
  createdAt: true,
  updatedAt: true,
} satisfies Prisma.PolicySettingsSelect;

type SettingsRow = Prisma.PolicySettingsGetPayload<{ select: typeof settingsSelect }>;

/** The policy's settings: defaults, ceilings and guardrails. */
export interface PolicySettingsRecord {
  readonly defaultTier: string;
  readonly defaultEndpointClass: string;
  readonly ceilings: TCeilings;
  readonly guardrails: TGuardrails;
  readonly version: number;
  readonly createdAt: string;
  readonly updatedAt: string;
}

const ZStoredSettings = z.object({ ceilings: ZCeilings, guardrails: ZGuardrails });

export function toSettingsRecord(row: SettingsRow): PolicySettingsRecord {
  const { ceilings, guardrails } = parseStored(
    ZStoredSettings,
    { ceilings: row.ceilings, guardrails: row.guardrails },
    "policy settings",
  );
  return {
    defaultTier: row.defaultTier,
    defaultEndpointClass: row.defaultEndpointClass,
    ceilings,
    guardrails,
    version: row.version,
    createdAt: isoOf(row.createdAt),
    updatedAt: isoOf(row.updatedAt),
  };
}

/** The settings, or CONFLICT when there is no policy yet. */
export async function findSettings(db: Db): Promise<PolicySettingsRecord> {
  const row = await db.policySettings.findUnique({ where: { id: 1 }, select: settingsSelect });
  if (row === null) throw noPolicyYet();
  return toSettingsRecord(row);
}

/** The settings as `versionedWrite` reads, checks and records them. */
export function settingsEntity(): VersionedEntity<PolicySettingsRecord> {
  return {
    find: (tx) => findSettings(tx),
    entityType: "settings",
    entityId: "settings",
    label: "the settings",
    view: auditView,
  };
}
