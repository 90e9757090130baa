import { importPolicyEndpoint } from "@/lib/api/endpoints/policy";
import { toRouteHandler } from "@/lib/api/route-handler";

export const POST = toRouteHandler(importPolicyEndpoint);
