import { getControlDeps, type ReadDeps } from "../control-deps";
import { findSettings, type PolicySettingsRecord } from "./settings-record";

/** The policy's settings, or CONFLICT when there is no policy yet. */
export async function getPolicySettings(
  deps: ReadDeps = getControlDeps(),
): Promise<PolicySettingsRecord> {
  return findSettings(deps.db);
}
