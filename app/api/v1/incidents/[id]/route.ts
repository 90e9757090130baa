import { getIncidentEndpoint } from "@/lib/api/endpoints/incidents";
import { toRouteHandler } from "@/lib/api/route-handler";

export const GET = toRouteHandler(getIncidentEndpoint);
