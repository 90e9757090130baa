import type { ReadDeps } from "../deps";
import { type DescriptorRuleRecord, findDescriptorRule } from "./descriptor-rule-record";

/** One descriptor rule, or NOT_FOUND. */
export async function getDescriptorRule(id: string, deps: ReadDeps): Promise<DescriptorRuleRecord> {
  return findDescriptorRule(deps.db, id);
}
