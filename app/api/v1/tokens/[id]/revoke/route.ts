import { revokeApiTokenEndpoint } from "@/lib/api/endpoints/tokens";
import { toRouteHandler } from "@/lib/api/route-handler";

export const POST = toRouteHandler(revokeApiTokenEndpoint);
