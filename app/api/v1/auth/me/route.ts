import { meEndpoint } from "@/lib/api/endpoints/auth";
import { toRouteHandler } from "@/lib/api/route-handler";

export const GET = toRouteHandler(meEndpoint);
