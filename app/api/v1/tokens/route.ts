import { createApiTokenEndpoint, listApiTokensEndpoint } from "@/lib/api/endpoints/tokens";
import { toRouteHandler } from "@/lib/api/route-handler";

export const GET = toRouteHandler(listApiTokensEndpoint);
export const POST = toRouteHandler(createApiTokenEndpoint);
