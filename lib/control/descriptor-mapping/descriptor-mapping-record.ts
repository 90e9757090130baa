import {
  DEFAULT_DESCRIPTOR_MAPPINGS,
  MAX_DESCRIPTOR_MAPPINGS,
  type TDescriptorMapping,
  ZDescriptorMapping,
} from "@limitplane/enforcer/policy";
import { z } from "zod";
import type { Prisma } from "@/lib/generated/prisma/client";
import { noPolicyYet } from "../policy/run-policy-change";
import type { Db } from "../stored";
import { parseStored } from "../stored";
import type { VersionedEntity } from "../versioned-write";

export const descriptorMappingsSelect = {
  descriptorMappings: true,
  descriptorMappingsVersion: true,
} satisfies Prisma.PolicySettingsSelect;

type MappingsRow = Prisma.PolicySettingsGetPayload<{ select: typeof descriptorMappingsSelect }>;

/**
 * The policy's descriptor mappings. `mappings` null: none stored, so `effective` (what the
 * rate-limit service applies) is the default, every domain with Envoy's usual entry keys.
 */
export interface DescriptorMappingsRecord {
  readonly mappings: readonly TDescriptorMapping[] | null;
  readonly effective: readonly TDescriptorMapping[];
  readonly version: number;
}

/** The mappings as stored and sent: at most 100, one per domain, each with its field errors. */
export const ZDescriptorMappingList = z
  .array(ZDescriptorMapping, { error: "descriptorMappings must be a list of domain mappings" })
  .max(MAX_DESCRIPTOR_MAPPINGS, {
    error: `a policy takes at most ${MAX_DESCRIPTOR_MAPPINGS} descriptor mappings`,
  })
  .superRefine((mappings, ctx) => {
    const seen = new Map<string, number>();
    mappings.forEach((mapping, index) => {
      const first = seen.get(mapping.domain);
      if (first !== undefined) {
        ctx.addIssue({
          code: "custom",
          path: [index, "domain"],
          message: `domain "${mapping.domain}" is already mapped by descriptorMappings[${first}]`,
        });
      }
      seen.set(mapping.domain, index);
    });
  });

export const DESCRIPTOR_MAPPINGS_LABEL = "the descriptor mappings";

export function toDescriptorMappingsRecord(row: MappingsRow): DescriptorMappingsRecord {
  const mappings =
    row.descriptorMappings === null
      ? null
      : parseStored(ZDescriptorMappingList, row.descriptorMappings, DESCRIPTOR_MAPPINGS_LABEL);
  return {
    mappings,
    effective: mappings ?? DEFAULT_DESCRIPTOR_MAPPINGS,
    version: row.descriptorMappingsVersion,
  };
}

/** What audit entries record: the stored mappings (null: the defaults) and their version. */
export function descriptorMappingsAuditView(record: DescriptorMappingsRecord) {
  return { mappings: record.mappings, version: record.version };
}

/** The mappings, or CONFLICT when there is no policy yet. */
export async function findDescriptorMappings(db: Db): Promise<DescriptorMappingsRecord> {
  const row = await db.policySettings.findUnique({
    where: { id: 1 },
    select: descriptorMappingsSelect,
  });
  if (row === null) throw noPolicyYet();
  return toDescriptorMappingsRecord(row);
}

/** The mappings as `versionedWrite` reads, checks and records them. */
export function descriptorMappingsEntity(): VersionedEntity<DescriptorMappingsRecord> {
  return {
    find: (tx) => findDescriptorMappings(tx),
    entityType: "descriptor-mapping",
    entityId: "descriptor-mappings",
    label: DESCRIPTOR_MAPPINGS_LABEL,
    view: descriptorMappingsAuditView,
  };
}
