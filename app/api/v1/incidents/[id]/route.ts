import { getIncidentEndpoint } from "@/lib/api/endpoints/incidents";
import { routeHandlers } from "@/lib/api/route-handler";

export const { GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE } = routeHandlers(getIncidentEndpoint);
