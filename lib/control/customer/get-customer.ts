import { getControlDeps, type ReadDeps } from "../control-deps";
import { type CustomerRecord, findCustomer } from "./customer-record";

/** One customer, or NOT_FOUND. */
export async function getCustomer(
  id: string,
  deps: ReadDeps = getControlDeps(),
): Promise<CustomerRecord> {
  return findCustomer(deps.db, id);
}
