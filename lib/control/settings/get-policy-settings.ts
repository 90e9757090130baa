import type { ReadDeps } from "../deps";
import { findSettings, type PolicySettingsRecord } from "./settings-record";

/** The policy's settings, or CONFLICT when there is no policy yet. */
export async function getPolicySettings(deps: ReadDeps): Promise<PolicySettingsRecord> {
  return findSettings(deps.db);
}
