/**
 * Registering a customer the gateways reported but the registry lacks, inside the transaction of
 * the change that needs it (an incident raise, a customer override): the registry row and its own
 * `customer.create` audit entry, with the change's actor and reason, commit or roll back with the
 * change. The tier is the one gateways reported when it is a tier of the policy, else the policy's
 * default tier; the operator sees which before confirming (the raise form says so).
 */
import { isCustomerId } from "@limitplane/enforcer/policy";
import { writeAuditEntry } from "../audit/audited-transaction";
import type { TChangeContext } from "../change-context";
import { customerSelect, toCustomerRecord } from "../customer/customer-record";
import type { ReadDeps, SeenRedisDeps } from "../deps";
import type { Tx } from "../policy/run-policy-change";
import { auditView } from "../stored";
import { findSeenCustomer } from "./get-seen-customer";
import type { SeenCustomerRecord } from "./seen-customer-record";

/**
 * What the gateways reported of `customerId` when the registry does not hold it, read before the
 * transaction (Redis is never read while the policy lock is held). Null when it is registered or
 * no gateway reported it: the change then goes on as before (and refuses an unknown customer).
 * Without `redisDeps` the gateways' reports are not consulted (a caller with no Redis).
 */
export async function seenOnlyCustomer(
  db: ReadDeps["db"],
  customerId: string,
  redisDeps?: SeenRedisDeps,
): Promise<SeenCustomerRecord | null> {
  if (redisDeps === undefined || !isCustomerId(customerId)) return null;
  const registered = await db.customer.findUnique({
    where: { id: customerId },
    select: { id: true },
  });
  if (registered !== null) return null;
  // Redis unreachable: as if unseen (the change then refuses the unknown customer).
  return findSeenCustomer(customerId, redisDeps).catch(() => null);
}

/** The tier a seen customer is registered with: the reported one if it exists, else the default. */
async function registrationTier(tx: Tx, seen: SeenCustomerRecord): Promise<string | null> {
  if (seen.reportedTier !== null) {
    const tier = await tx.tier.findUnique({
      where: { name: seen.reportedTier },
      select: { name: true },
    });
    if (tier !== null) return tier.name;
  }
  const settings = await tx.policySettings.findUnique({
    where: { id: 1 },
    select: { defaultTier: true },
  });
  return settings?.defaultTier ?? null;
}

/**
 * Registers `seen` unless a concurrent change did (read under the caller's policy lock), writing
 * its `customer.create` audit entry. Returns whether it registered it.
 */
export async function registerSeenCustomer(
  tx: Tx,
  ctx: TChangeContext,
  seen: SeenCustomerRecord | null,
  auditKey: string | undefined,
): Promise<boolean> {
  if (seen === null) return false;
  const existing = await tx.customer.findUnique({ where: { id: seen.id }, select: { id: true } });
  if (existing !== null) return false;
  const tier = await registrationTier(tx, seen);
  // No policy yet: the change itself refuses with its own message.
  if (tier === null) return false;
  const row = await tx.customer.create({
    data: { id: seen.id, displayName: seen.id, tier },
    select: customerSelect,
  });
  const customer = toCustomerRecord(row);
  await writeAuditEntry(
    tx,
    ctx,
    {
      action: "customer.create",
      entityType: "customer",
      entityId: customer.id,
      customerId: customer.id,
      before: null,
      after: {
        ...auditView(customer),
        registeredFrom: "gateway-report",
        reportedTier: seen.reportedTier,
        lastSeenAt: seen.lastSeenAt,
      },
      policyVersion: null,
    },
    auditKey,
  );
  return true;
}
