import type { ReadDeps } from "../deps";
import {
  type EndpointClassRecord,
  endpointClassSelect,
  toEndpointClassRecord,
} from "./endpoint-class-record";

/** Every endpoint class, by name. */
export async function listEndpointClasses(deps: ReadDeps): Promise<EndpointClassRecord[]> {
  const rows = await deps.db.endpointClass.findMany({
    orderBy: { name: "asc" },
    select: endpointClassSelect,
  });
  return rows.map(toEndpointClassRecord);
}
