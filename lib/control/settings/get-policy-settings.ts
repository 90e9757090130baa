import { controlDeps } from "@/lib/server/composition";
import type { ReadDeps } from "../deps";
import { findSettings, type PolicySettingsRecord } from "./settings-record";

/** The policy's settings, or CONFLICT when there is no policy yet. */
export async function getPolicySettings(
  deps: ReadDeps = controlDeps(),
): Promise<PolicySettingsRecord> {
  return findSettings(deps.db);
}
