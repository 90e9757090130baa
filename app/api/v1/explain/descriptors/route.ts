import { explainDescriptorsEndpoint } from "@/lib/api/endpoints/policy";
import { routeHandlers } from "@/lib/api/route-handler";

export const { GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE } = routeHandlers(
  explainDescriptorsEndpoint,
);
