import type { ReadDeps } from "../deps";
import {
  type CustomerOverrideRecord,
  customerOverrideSelect,
  toCustomerOverrideRecord,
} from "./customer-override-record";

/** One customer's overrides (all endpoints first, then by endpoint class). */
export async function listCustomerOverrides(
  customerId: string,
  deps: ReadDeps,
): Promise<CustomerOverrideRecord[]> {
  const rows = await deps.db.customerOverride.findMany({
    where: { customerId },
    orderBy: { scope: "asc" },
    select: customerOverrideSelect,
  });
  return rows.map(toCustomerOverrideRecord);
}
