import { createTierEndpoint, listTiersEndpoint } from "@/lib/api/endpoints/tiers";
import { routeHandlers } from "@/lib/api/route-handler";

export const { GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE } = routeHandlers(
  listTiersEndpoint,
  createTierEndpoint,
);
