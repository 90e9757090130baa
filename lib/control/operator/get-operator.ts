import type { AuthDeps } from "../deps";
import { findOperator, type OperatorRecord } from "./operator-record";

/** One operator, or NOT_FOUND. */
export async function getOperator(id: string, deps: Pick<AuthDeps, "db">): Promise<OperatorRecord> {
  return findOperator(deps.db, id);
}
