import { validationError } from "../errors";
import type { Tx } from "../policy/run-policy-change";
import { currentIncidentWhere } from "../policy/stored-policy";

/** Refuses a customer's tier that does not exist, at the `tier` field. */
export async function requireTier(tx: Tx, tier: string): Promise<void> {
  const found = await tx.tier.findUnique({ where: { name: tier }, select: { name: true } });
  if (found === null) {
    throw validationError([{ path: "tier", message: `there is no tier "${tier}"` }]);
  }
}

/** The customer's overrides (scopes) and current incidents (ids): what the snapshot holds of it. */
export async function findCustomerPolicyEntries(
  tx: Tx,
  customerId: string,
  nowMs: number,
): Promise<{ readonly overrides: string[]; readonly incidents: string[] }> {
  const [overrides, incidents] = await Promise.all([
    tx.customerOverride.findMany({
      where: { customerId },
      orderBy: { scope: "asc" },
      select: { scope: true },
    }),
    tx.incidentOverride.findMany({
      where: { ...currentIncidentWhere(nowMs), customerId },
      orderBy: { id: "asc" },
      select: { id: true },
    }),
  ]);
  return {
    overrides: overrides.map((override) => override.scope),
    incidents: incidents.map((incident) => incident.id),
  };
}
