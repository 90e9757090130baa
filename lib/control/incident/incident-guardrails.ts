import type { TIncidentOverride } from "@limitplane/enforcer/policy";
import { findCustomer } from "../customer/customer-record";
import { validationError } from "../errors";
import type { Tx } from "../policy/run-policy-change";

/**
 * What an incident being raised or extended now must meet before it is written: its customer
 * exists, and its expiry is still ahead (the one guardrail that needs the clock). The others
 * (a factor or absolute limit within `maxIncidentFactor` of the limit it replaces, a duration
 * within `maxIncidentDurationMs`) are the policy document's own rules, checked by
 * `runPolicyChange` on the customer's slice of the policy once the incident is written, with the
 * errors at the incident's fields (`factor`, `expiresAt`, `limit.capacity`): one implementation,
 * one read of the slice.
 */
export async function assertWithinGuardrails(
  tx: Tx,
  incident: TIncidentOverride,
  nowMs: number,
): Promise<void> {
  await findCustomer(tx, incident.customerId);
  if (Date.parse(incident.expiresAt) <= nowMs) {
    throw validationError([
      { path: "expiresAt", message: "expiresAt is already past; choose a future instant" },
    ]);
  }
}
