import { type AuthDeps, getAuthDeps } from "../auth/auth-deps";
import { type ApiTokenRecord, findApiToken } from "./api-token-record";

/** One API token (never its secret or hash), or NOT_FOUND. */
export async function getApiToken(
  id: string,
  deps: Pick<AuthDeps, "db" | "nowMs"> = getAuthDeps(),
): Promise<ApiTokenRecord> {
  return findApiToken(deps.db, id, deps.nowMs());
}
