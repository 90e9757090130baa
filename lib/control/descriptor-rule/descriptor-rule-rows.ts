/** Writing descriptor rule rows: shared by the policy import and the envoyproxy/ratelimit import. */
import { canonicalJson, type TDescriptorRule, ZDescriptorRule } from "@limitplane/enforcer/policy";
import type { Prisma } from "@/lib/generated/prisma/client";
import {
  descriptorRuleData,
  descriptorRuleDocument,
  descriptorRuleDocumentSelect,
} from "./descriptor-rule-record";

type Tx = Prisma.TransactionClient;

/**
 * Makes the stored rules `rules` (within `where`, all rules when absent): deletes the others,
 * creates the new, and updates (version + 1) those that differ. Returns how many rows changed.
 */
export async function replaceDescriptorRules(
  tx: Tx,
  rules: readonly TDescriptorRule[],
  where: Prisma.DescriptorRuleWhereInput = {},
): Promise<number> {
  let changed = (
    await tx.descriptorRule.deleteMany({
      where: { ...where, id: { notIn: rules.map((rule) => rule.id) } },
    })
  ).count;
  const rows = await tx.descriptorRule.findMany({
    where: { id: { in: rules.map((rule) => rule.id) } },
    select: descriptorRuleDocumentSelect,
  });
  const stored = new Map(rows.map((row) => [row.id, row]));
  for (const rule of rules) {
    const row = stored.get(rule.id);
    if (row === undefined) {
      await tx.descriptorRule.create({
        data: { id: rule.id, ...descriptorRuleData(rule) },
        select: { id: true },
      });
      changed++;
      continue;
    }
    const parsed = ZDescriptorRule.safeParse(descriptorRuleDocument(row));
    if (parsed.success && canonicalJson(parsed.data) === canonicalJson(rule)) continue;
    await tx.descriptorRule.update({
      where: { id: rule.id },
      data: { ...descriptorRuleData(rule), version: { increment: 1 } },
      select: { id: true },
    });
    changed++;
  }
  return changed;
}
