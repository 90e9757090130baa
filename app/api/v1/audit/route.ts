import { listAuditEntriesEndpoint } from "@/lib/api/endpoints/audit";
import { toRouteHandler } from "@/lib/api/route-handler";

export const GET = toRouteHandler(listAuditEntriesEndpoint);
