import { getCandidateEndpoint, updateCandidateEndpoint } from "@/lib/api/endpoints/candidates";
import { toRouteHandler } from "@/lib/api/route-handler";

export const GET = toRouteHandler(getCandidateEndpoint);
export const PATCH = toRouteHandler(updateCandidateEndpoint);
