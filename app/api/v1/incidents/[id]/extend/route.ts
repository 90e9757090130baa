import { extendIncidentEndpoint } from "@/lib/api/endpoints/incidents";
import { toRouteHandler } from "@/lib/api/route-handler";

export const POST = toRouteHandler(extendIncidentEndpoint);
