import type { AuthDeps } from "../deps";
import { type OperatorRecord, operatorSelect, toOperatorRecord } from "./operator-record";

/** Every operator, by email (a team, not a registry: no paging). */
export async function listOperators(deps: Pick<AuthDeps, "db">): Promise<OperatorRecord[]> {
  const rows = await deps.db.operator.findMany({
    orderBy: { email: "asc" },
    select: operatorSelect,
  });
  return rows.map(toOperatorRecord);
}
