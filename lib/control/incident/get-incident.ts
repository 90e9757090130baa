import type { ClockedReadDeps } from "../deps";
import {
  findIncident,
  type IncidentRecord,
  type IncidentState,
  incidentState,
} from "./incident-record";

/** One incident override and where it stands now, or NOT_FOUND. */
export async function getIncident(
  id: string,
  deps: ClockedReadDeps,
  nowMs: number = deps.clock.nowMs(),
): Promise<IncidentRecord & { readonly state: IncidentState }> {
  const incident = await findIncident(deps.db, id);
  return { ...incident, state: incidentState(incident, nowMs) };
}
