import { revokeSessionEndpoint } from "@/lib/api/endpoints/auth";
import { toRouteHandler } from "@/lib/api/route-handler";

export const DELETE = toRouteHandler(revokeSessionEndpoint);
