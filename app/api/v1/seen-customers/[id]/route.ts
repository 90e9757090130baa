import { getSeenCustomerEndpoint } from "@/lib/api/endpoints/seen-customers";
import { routeHandlers } from "@/lib/api/route-handler";

export const { GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE } =
  routeHandlers(getSeenCustomerEndpoint);
