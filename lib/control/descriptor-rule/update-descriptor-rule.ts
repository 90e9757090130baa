import { fieldErrorsFromZod, ZDescriptorRule } from "@limitplane/enforcer/policy";
import { z } from "zod";
import { type ChangeContext, parseChange, ZExpectedVersion } from "../change-context";
import type { ControlDeps } from "../deps";
import { toFieldErrors, validationError } from "../errors";
import { type ChangeReceipt, runPolicyChange } from "../policy/run-policy-change";
import { auditView } from "../stored";
import { versionedWrite } from "../versioned-write";
import {
  type DescriptorRuleRecord,
  descriptorRuleData,
  descriptorRuleEntity,
  descriptorRuleSelect,
  toDescriptorRuleRecord,
} from "./descriptor-rule-record";

/** The fields an edit may change (the id and pattern stay: a new pattern is a new rule). */
export const ZUpdateDescriptorRuleOptions = z
  .strictObject({
    id: ZDescriptorRule.shape.id,
    expectedVersion: ZExpectedVersion,
    limit: ZDescriptorRule.shape.limit.optional(),
    mode: ZDescriptorRule.shape.mode.removeDefault().optional(),
    onStoreFailure: ZDescriptorRule.shape.onStoreFailure.removeDefault().optional(),
    durability: ZDescriptorRule.shape.durability,
    name: ZDescriptorRule.shape.name.removeDefault().optional(),
    replaces: ZDescriptorRule.shape.replaces.removeDefault().optional(),
    wildcardCounter: ZDescriptorRule.shape.wildcardCounter.removeDefault().optional(),
    detailedMetric: ZDescriptorRule.shape.detailedMetric.removeDefault().optional(),
  })
  .refine(
    (options) => Object.keys(options).some((key) => key !== "id" && key !== "expectedVersion"),
    { error: "give at least one field to change" },
  );
export type UpdateDescriptorRuleOptions = z.input<typeof ZUpdateDescriptorRuleOptions>;

export async function updateDescriptorRule(
  options: UpdateDescriptorRuleOptions,
  context: ChangeContext,
  deps: ControlDeps,
): Promise<{ readonly rule: DescriptorRuleRecord } & ChangeReceipt> {
  const { input, ctx } = parseChange(ZUpdateDescriptorRuleOptions, options, context);
  const { id, expectedVersion, ...change } = input;
  return runPolicyChange(deps, ctx, {
    action: "descriptor-rule.update",
    entityType: "descriptor-rule",
    affectsSnapshot: true,
    focus: { collection: "descriptorRules", id },
    write: versionedWrite(descriptorRuleEntity(id), expectedVersion, async (tx, current) => {
      const { version: _v, createdAt: _c, updatedAt: _u, ...rule } = current;
      const parsed = ZDescriptorRule.safeParse({
        ...rule,
        ...Object.fromEntries(Object.entries(change).filter(([, value]) => value !== undefined)),
      });
      if (!parsed.success) {
        throw validationError(toFieldErrors(fieldErrorsFromZod(parsed.error)));
      }
      const next = parsed.data;
      const row = await tx.descriptorRule.update({
        where: { id },
        data: { ...descriptorRuleData(next), version: { increment: 1 } },
        select: descriptorRuleSelect,
      });
      const updated = toDescriptorRuleRecord(row);
      return { after: auditView(updated), value: { rule: updated } };
    }),
  });
}
