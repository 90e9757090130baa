import { listRejectedCustomersEndpoint } from "@/lib/api/endpoints/rejected-customers";
import { routeHandlers } from "@/lib/api/route-handler";

export const { GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE } = routeHandlers(
  listRejectedCustomersEndpoint,
);
