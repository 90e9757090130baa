import { createCandidateEndpoint, listCandidatesEndpoint } from "@/lib/api/endpoints/candidates";
import { toRouteHandler } from "@/lib/api/route-handler";

export const GET = toRouteHandler(listCandidatesEndpoint);
export const POST = toRouteHandler(createCandidateEndpoint);
