import { importPolicyEndpoint } from "@/lib/api/endpoints/policy";
import { routeHandlersOutsideProxy } from "@/lib/api/route-handler";

export const { GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE } =
  routeHandlersOutsideProxy(importPolicyEndpoint);
