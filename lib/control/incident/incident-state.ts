import { AppError } from "../errors";
import { type IncidentRecord, incidentLabel, incidentState } from "./incident-record";

/** Refuses to `verb` an incident that has expired or was reverted: it is history. */
export function assertIncidentIsCurrent(
  incident: IncidentRecord,
  nowMs: number,
  verb: "extend" | "revert",
): void {
  const state = incidentState(incident, nowMs);
  if (state === "expired") {
    throw new AppError(
      "CONFLICT",
      `${incidentLabel(incident.id)} expired at ${incident.expiresAt}; it cannot be ${verb === "extend" ? "extended" : "reverted"}.${verb === "extend" ? " Raise a new one." : ""}`,
      { details: { current: incident, state } },
    );
  }
  if (state === "reverted") {
    throw new AppError(
      "CONFLICT",
      `${incidentLabel(incident.id)} was already reverted at ${incident.revokedAt ?? "an earlier time"} by ${incident.revokedBy ?? "someone"}.${verb === "extend" ? " Raise a new one." : ""}`,
      { details: { current: incident, state } },
    );
  }
}
