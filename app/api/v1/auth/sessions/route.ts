import { listSessionsEndpoint } from "@/lib/api/endpoints/auth";
import { toRouteHandler } from "@/lib/api/route-handler";

export const GET = toRouteHandler(listSessionsEndpoint);
