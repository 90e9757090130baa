import { openApiEndpoint } from "@/lib/api/endpoints";
import { routeHandlers } from "@/lib/api/route-handler";

export const { GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE } = routeHandlers(openApiEndpoint);
