import type { ReadDeps } from "../deps";
import { type EndpointClassRecord, findEndpointClass } from "./endpoint-class-record";

/** One endpoint class, or NOT_FOUND. */
export async function getEndpointClass(name: string, deps: ReadDeps): Promise<EndpointClassRecord> {
  return findEndpointClass(deps.db, name);
}
