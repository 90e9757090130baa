import { createApiTokenEndpoint, listApiTokensEndpoint } from "@/lib/api/endpoints/tokens";
import { routeHandlers } from "@/lib/api/route-handler";

export const { GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE } = routeHandlers(
  listApiTokensEndpoint,
  createApiTokenEndpoint,
);
