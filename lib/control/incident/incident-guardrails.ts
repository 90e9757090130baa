import {
  checkIncidentGuardrails,
  findReplacedLimit,
  type TIncidentOverride,
} from "@limitplane/enforcer/policy";
import { findCustomer } from "../customer/customer-record";
import { toFieldErrors, validationError } from "../errors";
import { noPolicyYet, type Tx } from "../policy/run-policy-change";
import { parseStoredPolicy, readStoredPolicy } from "../policy/stored-policy";

/**
 * Refuses an incident override being raised or extended now that breaks the policy's guardrails:
 * a factor or absolute limit beyond `maxIncidentFactor` of the limit it replaces, a duration from
 * `startsAt` beyond `maxIncidentDurationMs`, or an expiry already past. Errors name the incident's
 * fields (`factor`, `expiresAt`, `limit.capacity`) and the bound. The customer must exist.
 */
export async function assertWithinGuardrails(
  tx: Tx,
  incident: TIncidentOverride,
  nowMs: number,
): Promise<void> {
  const customer = await findCustomer(tx, incident.customerId);
  // The customer's slice is all the guardrails need: the limit the incident replaces is its
  // override on the layer, or its tier's limit.
  const stored = await readStoredPolicy(tx, {
    nowMs,
    customers: "referenced",
    scope: { kind: "customer", customerId: incident.customerId },
  });
  if (stored === null) throw noPolicyYet();
  const doc = parseStoredPolicy(stored);
  // The document holds only customers with overrides or incidents; this one may be new to it.
  const withCustomer = doc.customers.some((listed) => listed.id === customer.id)
    ? doc
    : {
        ...doc,
        customers: [
          ...doc.customers,
          { id: customer.id, displayName: customer.displayName, tier: customer.tier },
        ],
      };
  const errors = checkIncidentGuardrails(incident, {
    guardrails: doc.guardrails,
    replacedLimit: findReplacedLimit(withCustomer, incident.customerId, incident.endpointClass),
    nowMs,
  });
  if (errors.length > 0) throw validationError(toFieldErrors(errors));
}
