import { promoteCandidateEndpoint } from "@/lib/api/endpoints/candidates";
import { routeHandlers } from "@/lib/api/route-handler";

export const { GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE } =
  routeHandlers(promoteCandidateEndpoint);
