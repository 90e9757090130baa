import { getApiTokenEndpoint } from "@/lib/api/endpoints/tokens";
import { toRouteHandler } from "@/lib/api/route-handler";

export const GET = toRouteHandler(getApiTokenEndpoint);
