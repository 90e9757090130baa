import { changePasswordEndpoint } from "@/lib/api/endpoints/auth";
import { routeHandlers } from "@/lib/api/route-handler";

export const { GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE } =
  routeHandlers(changePasswordEndpoint);
