import { exportPolicyEndpoint } from "@/lib/api/endpoints/policy";
import { toRouteHandler } from "@/lib/api/route-handler";

export const GET = toRouteHandler(exportPolicyEndpoint);
