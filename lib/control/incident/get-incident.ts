import { getControlDeps, type ReadDeps } from "../control-deps";
import {
  findIncident,
  type IncidentRecord,
  type IncidentState,
  incidentState,
} from "./incident-record";

/** One incident override and where it stands now, or NOT_FOUND. */
export async function getIncident(
  id: string,
  deps: ReadDeps = getControlDeps(),
  nowMs: number = Date.now(),
): Promise<IncidentRecord & { readonly state: IncidentState }> {
  const incident = await findIncident(deps.db, id);
  return { ...incident, state: incidentState(incident, nowMs) };
}
