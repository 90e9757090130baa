import type { ReadDeps } from "../deps";
import {
  type StagedChangeRecord,
  type StagedChangeState,
  stagedChangeSelect,
  toStagedChangeRecord,
} from "./staged-change-record";

/** Staged changes, newest first; `states` narrows them (for example the live ones). */
export async function listStagedChanges(
  deps: ReadDeps,
  options: { readonly states?: readonly StagedChangeState[]; readonly limit?: number } = {},
): Promise<StagedChangeRecord[]> {
  const rows = await deps.db.stagedChange.findMany({
    where: options.states === undefined ? {} : { state: { in: [...options.states] } },
    orderBy: [{ createdAt: "desc" }, { id: "asc" }],
    take: options.limit ?? 100,
    select: stagedChangeSelect,
  });
  return rows.map(toStagedChangeRecord);
}
