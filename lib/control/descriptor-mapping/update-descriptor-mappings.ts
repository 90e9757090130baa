import { z } from "zod";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { ControlDeps } from "../deps";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { jsonColumn } from "../stored";
import { versionedWrite } from "../versioned-write";
import {
  type DescriptorMappingsRecord,
  descriptorMappingsAuditView,
  descriptorMappingsEntity,
  descriptorMappingsSelect,
  toDescriptorMappingsRecord,
  ZDescriptorMappingList,
} from "./descriptor-mapping-record";

/**
 * Replaces every descriptor mapping at once (they are few, and read together: a domain's own
 * mapping, else `*`). `descriptorMappings: null` removes them all, so every domain gets the
 * default mapping again; an empty list maps no domain (only descriptor rules then apply).
 */
export const ZUpdateDescriptorMappingsOptions = z.strictObject({
  expectedVersion: ZExpectedVersion,
  descriptorMappings: ZDescriptorMappingList.nullable(),
});
export type UpdateDescriptorMappingsOptions = z.input<typeof ZUpdateDescriptorMappingsOptions>;

export async function updateDescriptorMappings(
  options: UpdateDescriptorMappingsOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly descriptorMappings: DescriptorMappingsRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZUpdateDescriptorMappingsOptions, options, context);
  return runPolicyChange(deps, ctx, {
    action: "descriptor-mapping.update",
    entityType: "descriptor-mapping",
    affectsSnapshot: true,
    focus: { collection: "settings" },
    write: versionedWrite(descriptorMappingsEntity(), input.expectedVersion, async (tx) => {
      const row = await tx.policySettings.update({
        where: { id: 1 },
        data: {
          descriptorMappings: jsonColumn(input.descriptorMappings),
          descriptorMappingsVersion: { increment: 1 },
        },
        select: descriptorMappingsSelect,
      });
      const descriptorMappings = toDescriptorMappingsRecord(row);
      return {
        after: descriptorMappingsAuditView(descriptorMappings),
        value: { descriptorMappings },
      };
    }),
  });
}
