import { discardCandidateEndpoint } from "@/lib/api/endpoints/candidates";
import { toRouteHandler } from "@/lib/api/route-handler";

export const POST = toRouteHandler(discardCandidateEndpoint);
