import { type AuthDeps, getAuthDeps } from "../auth/auth-deps";
import { findOperator, type OperatorRecord } from "./operator-record";

/** One operator, or NOT_FOUND. */
export async function getOperator(
  id: string,
  deps: Pick<AuthDeps, "db"> = getAuthDeps(),
): Promise<OperatorRecord> {
  return findOperator(deps.db, id);
}
