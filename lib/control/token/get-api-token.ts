import type { AuthDeps } from "../deps";
import { type ApiTokenRecord, findApiToken } from "./api-token-record";

/** One API token (never its secret or hash), or NOT_FOUND. */
export async function getApiToken(
  id: string,
  deps: Pick<AuthDeps, "db" | "clock">,
): Promise<ApiTokenRecord> {
  return findApiToken(deps.db, id, deps.clock.nowMs());
}
