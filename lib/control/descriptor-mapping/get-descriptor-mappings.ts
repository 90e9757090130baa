import type { ReadDeps } from "../deps";
import { type DescriptorMappingsRecord, findDescriptorMappings } from "./descriptor-mapping-record";

/** The policy's descriptor mappings, and what the rate-limit service applies. */
export function getDescriptorMappings(deps: ReadDeps): Promise<DescriptorMappingsRecord> {
  return findDescriptorMappings(deps.db);
}
