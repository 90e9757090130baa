import { getOperatorEndpoint, updateOperatorEndpoint } from "@/lib/api/endpoints/operators";
import { routeHandlers } from "@/lib/api/route-handler";

export const { GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE } = routeHandlers(
  getOperatorEndpoint,
  updateOperatorEndpoint,
);
