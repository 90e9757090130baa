import { readSeenCustomer } from "@limitplane/enforcer/publication";
import { parseOptions } from "../change-context";
import type { SeenRedisDeps } from "../deps";
import { AppError } from "../errors";
import { type SeenCustomerRecord, toSeenCustomerRecord } from "./seen-customer-record";
import { ZSeenCustomerId } from "./seen-customer-schemas";

/**
 * What the gateways reported of one customer (registered or not), or NOT_FOUND when no gateway
 * reported it within the retention (7 days). A malformed id is a field error.
 */
export async function getSeenCustomer(
  id: string,
  deps: SeenRedisDeps,
): Promise<SeenCustomerRecord> {
  const customerId = parseOptions(ZSeenCustomerId, id);
  const seen = await readSeenCustomer(deps.redis, deps.prefix, customerId);
  if (seen === null) {
    throw new AppError(
      "NOT_FOUND",
      `No gateway reported customer "${customerId}" in the last 7 days.`,
      { details: { entity: "SeenCustomer", id: customerId } },
    );
  }
  return toSeenCustomerRecord(seen);
}

/** {@link getSeenCustomer}, null instead of NOT_FOUND. */
export async function findSeenCustomer(
  id: string,
  deps: SeenRedisDeps,
): Promise<SeenCustomerRecord | null> {
  const customerId = parseOptions(ZSeenCustomerId, id);
  const seen = await readSeenCustomer(deps.redis, deps.prefix, customerId);
  return seen === null ? null : toSeenCustomerRecord(seen);
}
