import { getOperatorEndpoint, updateOperatorEndpoint } from "@/lib/api/endpoints/operators";
import { toRouteHandler } from "@/lib/api/route-handler";

export const GET = toRouteHandler(getOperatorEndpoint);
export const PATCH = toRouteHandler(updateOperatorEndpoint);
