import { importEnvoyConfigEndpoint } from "@/lib/api/endpoints/descriptor-rules";
import { routeHandlersOutsideProxy } from "@/lib/api/route-handler";

export const { GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE } =
  routeHandlersOutsideProxy(importEnvoyConfigEndpoint);
