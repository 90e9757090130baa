import { listIncidentsEndpoint, raiseIncidentEndpoint } from "@/lib/api/endpoints/incidents";
import { toRouteHandler } from "@/lib/api/route-handler";

export const GET = toRouteHandler(listIncidentsEndpoint);
export const POST = toRouteHandler(raiseIncidentEndpoint);
