import type { ReadDeps } from "../deps";
import { type CustomerRecord, findCustomer } from "./customer-record";

/** One customer, or NOT_FOUND. */
export async function getCustomer(id: string, deps: ReadDeps): Promise<CustomerRecord> {
  return findCustomer(deps.db, id);
}
