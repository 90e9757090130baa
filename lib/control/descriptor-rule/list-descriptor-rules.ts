import type { ReadDeps } from "../deps";
import {
  type DescriptorRuleRecord,
  descriptorRuleSelect,
  toDescriptorRuleRecord,
} from "./descriptor-rule-record";

/** Every descriptor rule, by domain then id. */
export async function listDescriptorRules(deps: ReadDeps): Promise<DescriptorRuleRecord[]> {
  const rows = await deps.db.descriptorRule.findMany({
    orderBy: [{ domain: "asc" }, { id: "asc" }],
    select: descriptorRuleSelect,
  });
  return rows.map(toDescriptorRuleRecord);
}
