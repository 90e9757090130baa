import { withdrawChangeRequestEndpoint } from "@/lib/api/endpoints/change-requests";
import { routeHandlers } from "@/lib/api/route-handler";

export const { GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE } = routeHandlers(
  withdrawChangeRequestEndpoint,
);
